/// One download in a session's queue, as kept by ``TaskStore``: its ``DownloadSpec`` and where it stands.
package struct StoredTask: Equatable, Sendable {
    /// Chosen by the caller, or a generated UUID string.
    public var id: String
    /// FIFO order, assigned by the store when the task is added.
    public var sequence: Int64
    /// The download as it was added, its destination absolute (the `spec` column, in the spec's one JSON shape).
    public var spec: DownloadSpec
    /// Higher runs first.
    public var priority: Int
    public var state: TaskState
    public var bytes: Int64
    public var total: Int64?
    /// The final file path, once known.
    public var filePath: String?
    /// A `HaulError.Kind` raw value, when the task failed.
    public var errorKind: String?
    public var errorMessage: String?
    /// Why it failed, for a program (``FailureReason`` as JSON); `nil` when the failure has no typed reason.
    public var errorReason: String?
    /// Unix seconds.
    public var createdAt: Double
    /// Unix seconds.
    public var updatedAt: Double
    /// In a fleet, the node that runs the task, or ran it last (`nil` for a waiting task, and in a store of one
    /// process). Only a claim sets it.
    public var node: String? = nil
    /// In a fleet, raised by one at each claim of the task: with ``node``, the lease it runs under. Only a claim
    /// changes it.
    public var epoch: Int64 = 0
    /// In a fleet, what a user asked of the task while another node runs it; that node carries it out.
    public var requested: TaskRequest? = nil

    /// The lease the task runs under, in a fleet.
    public var lease: TaskLease? {
        guard state == .running, let node else { return nil }
        return TaskLease(node: node, epoch: epoch)
    }

    public init(
        id: String, sequence: Int64, spec: DownloadSpec, priority: Int = 0, state: TaskState = .waiting, bytes: Int64 = 0,
        total: Int64? = nil, filePath: String? = nil, errorKind: String? = nil, errorMessage: String? = nil,
        errorReason: String? = nil, createdAt: Double, updatedAt: Double
    ) {
        self.id = id
        self.sequence = sequence
        self.spec = spec
        self.priority = priority
        self.state = state
        self.bytes = bytes
        self.total = total
        self.filePath = filePath
        self.errorKind = errorKind
        self.errorMessage = errorMessage
        self.errorReason = errorReason
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// The URL, as the `url` column keeps it (with the destination, the key that makes a task unique).
    public var url: String { spec.url.absoluteString }

    /// The destination (always set for a stored task: a session gives a task without one its default folder).
    public var destination: DownloadSpec.Destination? { spec.destination }

    /// Records the failure: state `.failed` with the error's kind, message and reason.
    public mutating func fail(_ error: HaulError) {
        state = .failed
        record(error)
    }

    /// Keeps `error` (its kind, message and typed reason) as the task's error, or clears it with `nil`.
    public mutating func record(_ error: HaulError?) {
        errorKind = error?.kind.rawValue
        errorMessage = error?.message
        errorReason = error.flatMap(FailureReasonJSON.encode)
    }

    /// The error kept for the task, with its typed reason when one was recorded.
    public var error: HaulError? {
        guard let kind = errorKind.flatMap(HaulError.Kind.init(rawValue:)) else { return nil }
        return HaulError(kind, errorMessage ?? "", reason: FailureReasonJSON.decode(errorReason) ?? .other)
    }
}

/// What a user asked of a task that another node of the fleet runs: that node stops it and carries it out (or, when
/// the node is gone, the node that takes the task over).
package enum TaskRequest: String, Sendable, Equatable {
    /// Stop it, bytes kept (paused).
    case pause
    /// Stop it for good, partial data deleted (cancelled).
    case cancel
    /// Stop it and remove the task, partial data deleted.
    case remove
}
