import Foundation
import Logging

/// How a ``DownloadSession`` runs its tasks.
public struct SessionConfiguration: Sendable {
    /// Downloads running at once (default 3); change it at run time with ``DownloadSession/setMaxConcurrentDownloads(_:)``.
    public var maxConcurrentDownloads = 3
    /// Downloads running at once against one host.
    public var maxDownloadsPerHost = 8
    /// Connections to one host from every node of a fleet together (`nil`: no such limit). Under it each download
    /// uses one connection, and a node claims a host's task only while the fleet runs fewer than this many of that
    /// host's downloads: ten nodes stay as polite to a server as one. On one machine it caps that machine's.
    public var fleetMaxConnectionsPerHost: Int?

    /// The values ``maxConcurrentDownloads`` may take (0 holds the queue), checked wherever it is set: the protocol
    /// (`session.configure`), `haul session set --max-concurrent`.
    public static let maxConcurrentRange = 0...1_000
    /// The values ``fleetMaxConnectionsPerHost`` may take, checked wherever it is set.
    public static let fleetMaxPerHostRange = 1...10_000
    /// What each task leaves unsaid (retries, proxies, TLS, connections…): a task's own ``DownloadSpec/settings``
    /// win (``DownloadSettings/resolved(over:)``). A background session sends these with each task it adds.
    public var downloadSettings = DownloadSettings()
    /// The backoff of each task (its longest wait), and its retries and first wait when neither the task nor
    /// ``downloadSettings`` says them.
    public var retry = RetryPolicy()
    /// Before any byte of a task has arrived, a refused connection or an unknown host fails it after two quick
    /// retries instead of the whole backoff (``retry``): right for a person waiting at a terminal (`haul get -i`), as
    /// curl and wget give up on such a URL at once; not for a queue that should wait for its server to come back.
    public var failsFastBeforeData = false
    /// A download that receives nothing for this long is retried.
    public var stallTimeout: Duration = .seconds(30)
    /// How long a download waits for a connection to be made before the attempt fails (and is retried).
    public var connectTimeout: Duration = .seconds(30)
    /// Which proxy each download goes through (none by default): ``downloadSettings``' `proxies`.
    public var proxies: ProxyChoice {
        get { downloadSettings.proxies ?? ProxyChoice() }
        set { downloadSettings.proxies = newValue == ProxyChoice() ? nil : newValue }
    }
    /// Trusted CAs, `insecure` and client certificate for every download (the system's trust store by default):
    /// ``downloadSettings``' `tls`.
    public var tls: TLSTrust {
        get { downloadSettings.tls ?? TLSTrust() }
        set { downloadSettings.tls = newValue.isDefault ? nil : newValue }
    }
    /// Bytes per second for all the session's downloads together, or `nil` for no limit.
    public var rateLimit: Int64?
    /// Headers sent with every task's request (a task's own headers win).
    public var defaultHeaders = HTTPFields()
    /// Where tasks without a destination are saved (default: the current folder).
    public var defaultDirectory: String?
    /// Tasks that were running when the process ended start again by themselves (else they are restored paused).
    public var resumeRunningTasksOnRelaunch = true
    /// Where the session's store lives (default: from the environment).
    public var home = HaulHome(environment: ProcessInfo.processInfo.environment)
    /// A shell command run after each task finishes or fails, with the task in `HAUL_TASK_*` environment variables.
    public var completionCommand: String?
    /// Called after each task finishes or fails.
    public var onCompletion: (@Sendable (TaskSnapshot) -> Void)?
    /// Paths (absolute) that a task saving into a folder (``DownloadSpec/Destination/directory(_:)``) does not take
    /// as its file, even while free: other tasks of the session name them as their files (`haul get -i`'s `out=`
    /// lines) and may not have started yet. It takes `name (1)` instead, as for a taken name. An in-process session's
    /// only; `nil`: none.
    public var isReservedPath: (@Sendable (String) -> Bool)?
    /// Events are throttled to this many progress reports per second per task.
    public var progressInterval: Duration = .milliseconds(250)
    /// Where an in-process session's downloads log each request, each answer (with the protocol it came over) and
    /// each resume decision, at debug level (`haul get -v` of several URLs); by default nowhere. Secrets are never
    /// logged. A background session's downloads run in the daemon, which logs on its own (`haul daemon --verbose`).
    public var logger = Logger(label: "haul", factory: { _ in SwiftLogNoOpLogHandler() })
    /// Waiting tasks a local session reads from its store at a time (it holds a few pages of its queue in memory).
    package var waitingPageSize = 4096
    /// When set, the session is a background session: `haul daemon` does the transfers (see ``background``).
    public var daemon: DaemonEndpoint?

    /// An in-process session with the defaults.
    public init() {}

    /// A background session: the transfers run in `haul daemon` (started when none is running) and go on
    /// after this process exits; ``completionCommand`` runs in the daemon, ``onCompletion`` in this process.
    public static var background: SessionConfiguration { background(DaemonEndpoint()) }

    /// A background session whose daemon is reached (and started) as `daemon` says.
    public static func background(_ daemon: DaemonEndpoint) -> SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.daemon = daemon
        return configuration
    }
}

/// How to reach `haul daemon`.
public struct DaemonEndpoint: Sendable, Equatable {
    /// The socket; `nil`: the default location (see docs/protocol.md).
    public var socketPath: String?
    /// Start a daemon when none answers.
    public var autostart = true
    /// The `haul` executable to start; `nil`: `$HAUL_EXECUTABLE`, else `haul` beside this program, else on `PATH`.
    public var executable: String?

    /// The daemon at `socketPath` (default location when `nil`), started from `executable` when none answers
    /// and `autostart` is set.
    public init(socketPath: String? = nil, autostart: Bool = true, executable: String? = nil) {
        self.socketPath = socketPath
        self.autostart = autostart
        self.executable = executable
    }
}

/// A download to add to a session: its ``DownloadSpec``, a priority and optionally an id of the caller's.
///
/// The spec's members read and write through the request (`request.url`, `request.overwrite`).
@dynamicMemberLookup
public struct DownloadRequest: Sendable {
    /// What to download, where and how.
    public var spec: DownloadSpec
    /// Higher runs first.
    public var priority = 0
    /// A caller-chosen id (like YCDownloadSession's `fileId`); adding the same id again returns the existing task.
    public var id: String?

    /// `destination` `nil`: the session's default folder under the server's name.
    public init(url: URL, destination: DownloadSpec.Destination? = nil) {
        spec = DownloadSpec(url: url, destination: destination)
    }

    /// The request for `spec`, run before lower priorities, under `id` when given.
    public init(_ spec: DownloadSpec, priority: Int = 0, id: String? = nil) {
        self.spec = spec
        self.priority = priority
        self.id = id
    }

    /// A member of the spec (`request.checksum`, `request.overwrite`).
    public subscript<Value>(dynamicMember member: WritableKeyPath<DownloadSpec, Value>) -> Value {
        get { spec[keyPath: member] }
        set { spec[keyPath: member] = newValue }
    }
}

/// What waits in a session, as a live view shows it beside its counts (``DownloadSession/waitingSummary()``).
public struct WaitingSummary: Equatable, Sendable {
    /// How many tasks wait; `nil` when the session holds only the first of them in memory (a long list), and
    /// counting the rest would mean reading the store.
    public var waiting: Int?
    /// The per-host limit that holds waiting tasks back while the session runs fewer than it may at once (the
    /// largest, when hosts differ); `nil` when none does.
    public var heldBackPerHost: Int?

    /// `waiting` tasks (`nil`: not known), some held back by the per-host limit `heldBackPerHost` (`nil`: none).
    public init(waiting: Int?, heldBackPerHost: Int?) {
        self.waiting = waiting
        self.heldBackPerHost = heldBackPerHost
    }
}

/// A task as it stands.
public struct TaskSnapshot: Equatable, Sendable {
    /// The task's id, unique in its session (given in the ``DownloadRequest`` or made when it was added).
    public var id: String
    /// The URL as it was added; it may hold `user:password@`, so don't print it as it is.
    public var url: String
    /// Where the task stands.
    public var state: TaskState
    /// Among waiting tasks, a higher priority starts first.
    public var priority: Int
    /// Bytes held: written and durable for a stored task, the latest count for a running one.
    public var bytes: Int64
    /// The file's size, once the server has said it.
    public var total: Int64?
    /// The recent speed of a running task (over the last few seconds); `nil` otherwise.
    public var bytesPerSecond: Double?
    /// The downloaded file (once its name is known).
    public var filePath: String?
    /// Why the task failed.
    public var error: HaulError?
    /// Why a running task is not moving: its last retry and reason (`retry 2/5 in 4 s: connection refused (host:80)`).
    public var note: String? = nil
    /// The protocol a finished task's bytes came over (`HTTP/1.1` or `HTTP/2`), in the event of its end.
    public var httpVersion: String? = nil
    /// In the event of its end: with `noClobber`, something already had the file's name and was left as it was.
    public var keptExisting = false
    /// In a fleet, the node that runs the task (or ran it last); `nil` on one machine.
    public var node: String? = nil

    /// A task as it stands (for a ``CompletionCommand`` run outside a session, say).
    public init(
        id: String, url: String, state: TaskState, priority: Int = 0, bytes: Int64, total: Int64? = nil,
        bytesPerSecond: Double? = nil, filePath: String? = nil, error: HaulError? = nil, note: String? = nil, node: String? = nil
    ) {
        self.id = id
        self.url = url
        self.state = state
        self.priority = priority
        self.bytes = bytes
        self.total = total
        self.bytesPerSecond = bytesPerSecond
        self.filePath = filePath
        self.error = error
        self.note = note
        self.node = node
    }
}

/// What a session reports.
public enum SessionEvent: Sendable, Equatable {
    /// A task was added to the session (not sent for one that already existed).
    case added(TaskSnapshot)
    /// A task moved from one state to another.
    case stateChanged(id: String, from: TaskState, to: TaskState)
    /// A running task's progress, at most once per ``SessionConfiguration/progressInterval``.
    case progress(id: String, DownloadProgress)
    /// The task's file is complete and verified at `filePath`.
    case finished(TaskSnapshot)
    /// The task gave up; its ``TaskSnapshot/error`` says why, and ``DownloadSession/resume(_:)`` tries again.
    case failed(TaskSnapshot)
    /// No task is waiting or running any more (sent once each time the queue drains).
    case allFinished
    /// The task was removed from the session (``DownloadSession/remove(_:deleteFile:)``, `haul rm`, another client);
    /// no event about it follows.
    case removed(id: String)

    /// The task the event is about, if any.
    public var taskID: String? {
        switch self {
        case .added(let task), .finished(let task), .failed(let task): return task.id
        case .stateChanged(let id, _, _), .progress(let id, _), .removed(let id): return id
        case .allFinished: return nil
        }
    }
}

/// What removing a task (``DownloadSession/remove(_:deleteFile:)``, `haul rm`) did with one of its files, when there
/// is something to say: a finished file deleted or kept (`deleteFile`), a partial file kept because it is not the
/// task's own any more, or a file given to `--continue` given back to its owner.
public struct RemovedFile: Codable, Equatable, Sendable {
    /// What became of the file.
    public enum Outcome: String, Codable, Sendable {
        /// Deleted: the very file the task wrote.
        case deleted
        /// Left where it is: not the task's own file (``message`` says why).
        case kept
        /// A file given to `--continue`: cut back to the length it had and put back at its own name (or left at the
        /// partial file's name when that name is taken; ``message`` says where).
        case givenBack
    }

    /// The task's id.
    public var id: String
    /// The file's path.
    public var path: String
    /// What became of it.
    public var outcome: Outcome
    /// One line for a person: `deleted PATH`, `kept PATH: haul did not write it`.
    public var message: String

    /// A file's fate, said in `message`.
    public init(id: String, path: String, outcome: Outcome, message: String) {
        self.id = id
        self.path = path
        self.outcome = outcome
        self.message = message
    }
}
