/// A failure a person sees: one line saying what happened and what to do, and the class it belongs to.
public struct HaulError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Classes of failure; the CLI maps each to its own exit code.
    public typealias Kind = ErrorKind

    public var kind: Kind
    public var message: String

    /// `message` is shown as it is, except that any URL's `user:password@` becomes `***`.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = Redaction.text(message)
    }

    public var description: String { message }
}
