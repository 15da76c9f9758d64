import struct Foundation.URL

/// The one description of a download: what to fetch, where to put it and how, as a caller asked for it.
///
/// `haul get`, `haul add`, a ``DownloadSpec`` given to a session and a task in a session's store are all this value:
/// the CLI makes it from its flags in one place, a session stores it in one column, a background session sends it
/// to the daemon as one JSON shape (docs/protocol.md, its synthesized-style `Codable`), and one function
/// (``DownloadSettings/resolved(over:)``) merges its ``settings`` with the session's and the engine's. `nil` means
/// "the default".
@dynamicMemberLookup
public struct DownloadSpec: Equatable, Sendable {
    /// Where the file goes: an exact path, or a folder plus the name the server suggests, or standard output.
    ///
    /// A `file` path that is a character device, FIFO or socket (`/dev/null`, a named pipe) is written straight
    /// through like `standardOutput`: no partial file, no rename, no resume, and never replaced or removed.
    public enum Destination: Equatable, Hashable, Sendable {
        /// This exact path; a relative path is taken from the folder the download was asked for in.
        case file(String)
        /// This folder, under the name the server suggests (`Content-Disposition`, else the URL's last segment);
        /// a taken name becomes `name (1).ext`.
        case directory(String)
        /// The bytes go to the process's standard output as they arrive (`-o -`); nothing is kept to resume.
        case standardOutput
    }

    /// What to fetch (`http` or `https`).
    public var url: URL
    /// `nil`: the session's default folder, under the name the server suggests.
    public var destination: Destination?
    /// A folder the destination lies in or below, and below which no symbolic link is followed: the folders
    /// between it and the file are entered one by one without following a link (a link there fails the download,
    /// naming it), created when missing; the folder itself is opened as any destination's. `nil`: none (the
    /// destination's folder is opened as the user named it, through links of the user's own).
    ///
    /// `haul get -i`/`haul add -i` set it to the command's folder for a list's `dir=` and `out=` entries: a list
    /// may come from anyone, and a link inside that folder (`dl/link -> ../elsewhere`) would lead its files out.
    public var confinedTo: String?
    /// Extra request headers; sent only to the origin of `url`. A session's default headers fill in the others.
    public var headers = HTTPFields()
    /// The digest the finished file must have; a mismatch discards it.
    public var checksum: Checksum?
    /// Connections for one file: `nil` chooses (up to 8 for large files, 1 for small ones); 1 never splits.
    public var segments: Int?
    /// How the download is made (retries, rate, proxies, TLS, connections…): what it says itself, over its
    /// session's and the engine's (``DownloadSettings/resolved(over:)``). Its members read and write through the
    /// spec too (`spec.overwrite`, `spec.maxRetries`).
    public var settings = DownloadSettings()

    /// A download of `url` to `destination`, every other member at its default.
    public init(url: URL, destination: Destination? = nil) {
        self.url = url
        self.destination = destination
    }

    /// The most connections one file may use (the CLI's `--segments`, the protocol and the page alike).
    public static let segmentRange = 1...64
    /// How many connections to one host a download may ask for (`--max-connections-per-host`, the protocol).
    public static var connectionsPerHostRange: ClosedRange<Int> { DownloadSettings.connectionsPerHostRange }
    /// How many retries a download may ask for (`--retries`, the protocol).
    public static var retryRange: ClosedRange<Int> { DownloadSettings.retryRange }
    /// Seconds before the first retry a download may ask for (`--retry-wait`, the protocol).
    public static var retryWaitRange: ClosedRange<Double> { DownloadSettings.retryWaitRange }

    /// Checks every value (the settings' by ``DownloadSettings/validate()``, and what depends on the destination);
    /// the message names the offending one.
    public func validate() throws(InputError) {
        try settings.validate()
        try validateOwnMembers()
    }

    /// Checks what the spec holds beside its settings, and what of them depends on the destination.
    func validateOwnMembers() throws(InputError) {
        switch destination {
        case .file(let path)?: if path.utf8.contains(0) { throw InputError("the destination path has a NUL byte in it") }
        case .directory(let folder)?: if folder.utf8.contains(0) { throw InputError("the destination folder has a NUL byte in it") }
        case .standardOutput?, nil: break
        }
        if let root = confinedTo { try Self.validateConfinement(root, destination) }
        let isFile = if case .file? = destination { true } else { false }
        if settings.continuePartial == true, !isFile { throw InputError("continue needs a file path: the partial file to continue") }
        if settings.timestamping == true, !isFile { throw InputError("timestamping needs a file path: the file to compare") }
        if settings.noClobber == true, !isFile { throw InputError("noClobber needs a file path: the name that may be taken") }
        // A file kept unchecked would be reported as what the checksum names.
        if settings.noClobber == true, checksum != nil { throw InputError("use either noClobber or a checksum, not both") }
        if let segments, !Self.segmentRange.contains(segments) { throw InputError("\"segments\" must be between 1 and 64") }
        // Headers checked as `-H` checks them, wherever the spec came from (the protocol, the dashboard, a library):
        // a `Range`, `If-Range` or `Connection` of the user's would go out beside Haul's own.
        for field in headers { _ = try UserInput.header("\(field.name): \(field.value)") }
    }

    /// Checks that `destination` lies in or below `root` (``confinedTo``), without `..` below it.
    private static func validateConfinement(_ root: String, _ destination: Destination?) throws(InputError) {
        if root.utf8.contains(0) { throw InputError("the confining folder has a NUL byte in it") }
        guard !root.isEmpty else { throw InputError("the confining folder is empty") }
        let folder: String
        switch destination {
        case .file(let path)?:
            guard let slash = path.lastIndex(of: "/") else { folder = "."; break }
            folder = slash == path.startIndex ? "/" : String(path[..<slash])
        case .directory(let path)?: folder = path
        case .standardOutput?, nil:
            throw InputError("a confined download needs a file or folder to save to below \(root)")
        }
        guard ListedPath.parts(of: folder, below: root) != nil else {
            throw InputError("\(folder) is not inside \(root), the folder the download is confined to")
        }
    }

    /// This spec with its relative paths (destination, certificate files) made absolute with `absolute`, and no
    /// destination replaced by `defaultDirectory`: how a session fixes a download's place when it is added, since
    /// the folder it runs in (or the daemon's) may differ later.
    public func anchored(defaultDirectory: String, _ absolute: (String) -> String) -> DownloadSpec {
        var anchored = self
        switch destination {
        case .file(let path)?: anchored.destination = .file(absolute(path))
        case .directory(let folder)?: anchored.destination = .directory(absolute(folder))
        case .standardOutput?: break
        case nil: anchored.destination = .directory(absolute(defaultDirectory))
        }
        anchored.confinedTo = confinedTo.map(absolute)
        anchored.settings.tls = settings.tls?.mappingPaths(absolute)
        return anchored
    }

    /// A member of the spec's ``settings`` (`spec.overwrite`, `spec.proxies`).
    public subscript<Value>(dynamicMember member: WritableKeyPath<DownloadSettings, Value>) -> Value {
        get { settings[keyPath: member] }
        set { settings[keyPath: member] = newValue }
    }
}
