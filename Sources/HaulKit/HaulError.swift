/// A failure a person sees: one line saying what happened and what to do, and the class it belongs to.
public struct HaulError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Classes of failure; the CLI maps each to its own exit code.
    public typealias Kind = ErrorKind

    /// The class of the failure (what the CLI's exit code says); ``reason`` tells the case apart.
    public var kind: Kind
    /// What happened, in words, without the next step in any front end's terms.
    public var message: String
    /// Why, with what a program needs to act on it (the path, the status, the checksums).
    public var reason: FailureReason

    /// `message` is shown as it is, except that any URL's `user:password@` becomes `***`.
    public init(_ kind: Kind, _ message: String, reason: FailureReason = .other) {
        self.kind = kind
        self.message = Redaction.text(message)
        self.reason = reason
    }

    public var description: String { message }
}
