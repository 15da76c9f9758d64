/// One download in a session's queue, as kept by ``TaskStore``.
package struct StoredTask: Codable, Equatable, Sendable {
    /// Chosen by the caller, or a generated UUID string.
    public var id: String
    /// FIFO order, assigned by the store when the task is added.
    public var sequence: Int64
    public var url: String
    /// `"file"` or `"directory"`.
    public var destinationKind: String
    /// Absolute path of the file or folder.
    public var destinationPath: String
    public var headers: [HTTPFields.Field]
    /// `ALG:HEX`, as `Checksum.description` writes it.
    public var checksum: String?
    public var segments: Int?
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
    public var options: TaskOptions

    public init(
        id: String, sequence: Int64, url: String, destinationKind: String, destinationPath: String,
        headers: [HTTPFields.Field] = [], checksum: String? = nil, segments: Int? = nil, priority: Int = 0,
        state: TaskState = .waiting, bytes: Int64 = 0, total: Int64? = nil, filePath: String? = nil,
        errorKind: String? = nil, errorMessage: String? = nil, errorReason: String? = nil, createdAt: Double, updatedAt: Double,
        options: TaskOptions = TaskOptions()
    ) {
        self.id = id
        self.sequence = sequence
        self.url = url
        self.destinationKind = destinationKind
        self.destinationPath = destinationPath
        self.headers = headers
        self.checksum = checksum
        self.segments = segments
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
        self.options = options
    }

    /// The destination as a download option, or `nil` for an unknown kind.
    public var destination: DownloadOptions.Destination? {
        switch destinationKind {
        case NewTask.fileKind: return .file(destinationPath)
        case NewTask.directoryKind: return .directory(destinationPath)
        default: return nil
        }
    }

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

    private enum CodingKeys: String, CodingKey {
        case id, sequence, url, destinationKind, destinationPath, headers, checksum, segments, priority, state
        case bytes, total, filePath, errorKind, errorMessage, errorReason, createdAt, updatedAt, options
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        sequence = try c.decode(Int64.self, forKey: .sequence)
        url = try c.decode(String.self, forKey: .url)
        destinationKind = try c.decode(String.self, forKey: .destinationKind)
        destinationPath = try c.decode(String.self, forKey: .destinationPath)
        headers = try c.decodeIfPresent([HeaderField].self, forKey: .headers)?.map(\.field) ?? []
        checksum = try c.decodeIfPresent(String.self, forKey: .checksum)
        segments = try c.decodeIfPresent(Int.self, forKey: .segments)
        priority = try c.decodeIfPresent(Int.self, forKey: .priority) ?? 0
        state = try c.decode(TaskState.self, forKey: .state)
        bytes = try c.decodeIfPresent(Int64.self, forKey: .bytes) ?? 0
        total = try c.decodeIfPresent(Int64.self, forKey: .total)
        filePath = try c.decodeIfPresent(String.self, forKey: .filePath)
        errorKind = try c.decodeIfPresent(String.self, forKey: .errorKind)
        errorMessage = try c.decodeIfPresent(String.self, forKey: .errorMessage)
        errorReason = try c.decodeIfPresent(String.self, forKey: .errorReason)
        createdAt = try c.decode(Double.self, forKey: .createdAt)
        updatedAt = try c.decode(Double.self, forKey: .updatedAt)
        options = try c.decodeIfPresent(TaskOptions.self, forKey: .options) ?? TaskOptions()
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(sequence, forKey: .sequence)
        try c.encode(url, forKey: .url)
        try c.encode(destinationKind, forKey: .destinationKind)
        try c.encode(destinationPath, forKey: .destinationPath)
        try c.encode(headers.map(HeaderField.init), forKey: .headers)
        try c.encodeIfPresent(checksum, forKey: .checksum)
        try c.encodeIfPresent(segments, forKey: .segments)
        try c.encode(priority, forKey: .priority)
        try c.encode(state, forKey: .state)
        try c.encode(bytes, forKey: .bytes)
        try c.encodeIfPresent(total, forKey: .total)
        try c.encodeIfPresent(filePath, forKey: .filePath)
        try c.encodeIfPresent(errorKind, forKey: .errorKind)
        try c.encodeIfPresent(errorMessage, forKey: .errorMessage)
        try c.encodeIfPresent(errorReason, forKey: .errorReason)
        try c.encode(createdAt, forKey: .createdAt)
        try c.encode(updatedAt, forKey: .updatedAt)
        if options != TaskOptions() { try c.encode(options, forKey: .options) }
    }
}

/// What a caller gives ``TaskStore`` to queue a download.
package struct NewTask: Sendable, Equatable {
    static let fileKind = "file"
    static let directoryKind = "directory"

    /// `nil` lets the store generate a UUID string.
    public var id: String?
    public var url: String
    /// `"file"` or `"directory"`.
    public var destinationKind: String
    /// Absolute path of the file or folder.
    public var destinationPath: String
    public var headers: [HTTPFields.Field]
    /// `ALG:HEX`, as `Checksum.description` writes it.
    public var checksum: String?
    public var segments: Int?
    /// Higher runs first.
    public var priority: Int
    public var options: TaskOptions

    public init(
        id: String? = nil, url: String, destinationKind: String, destinationPath: String,
        headers: [HTTPFields.Field] = [], checksum: String? = nil, segments: Int? = nil, priority: Int = 0,
        options: TaskOptions = TaskOptions()
    ) {
        self.id = id
        self.url = url
        self.destinationKind = destinationKind
        self.destinationPath = destinationPath
        self.headers = headers
        self.checksum = checksum
        self.segments = segments
        self.priority = priority
        self.options = options
    }

    /// The task for `url` saved at `destination`.
    public init(
        id: String? = nil, url: String, destination: DownloadOptions.Destination,
        headers: [HTTPFields.Field] = [], checksum: String? = nil, segments: Int? = nil, priority: Int = 0,
        options: TaskOptions = TaskOptions()
    ) {
        let kind: String, path: String
        switch destination {
        case .file(let file): (kind, path) = (Self.fileKind, file)
        case .directory(let folder): (kind, path) = (Self.directoryKind, folder)
        // Not a kind the store accepts: a session's tasks are saved to files.
        case .standardOutput: (kind, path) = ("stdout", "-")
        }
        self.init(
            id: id, url: url, destinationKind: kind, destinationPath: path,
            headers: headers, checksum: checksum, segments: segments, priority: priority, options: options)
    }

    /// The task for a download described by `options` (URL, destination, headers, checksum, segments, TaskOptions).
    public init(id: String? = nil, options: DownloadOptions, priority: Int = 0) {
        self.init(
            id: id, url: options.url.absoluteString, destination: options.destination,
            headers: options.headers.fields, checksum: options.checksum?.description,
            segments: options.segments, priority: priority, options: TaskOptions(options))
    }
}

/// The JSON shape of one header field: `{"name": "...", "value": "..."}`.
struct HeaderField: Codable {
    var name: String
    var value: String

    init(_ field: HTTPFields.Field) { (name, value) = (field.name, field.value) }

    var field: HTTPFields.Field { HTTPFields.Field(name: name, value: value) }
}
