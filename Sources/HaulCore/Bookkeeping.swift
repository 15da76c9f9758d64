/// When a download over one connection reports progress and makes its bytes durable while they arrive: progress
/// at most every ``Configuration/progressInterval``, a checkpoint every ``Configuration/checkpointBytes``, or every
/// ``Configuration/checkpointInterval`` while any byte is unsynced; both looked at every
/// ``Configuration/lookEveryBytes`` (not at every small chunk), or once a progress interval has passed since the last
/// look (a slow link, where those bytes take long).
package struct Bookkeeping: Sendable, Equatable {
    package struct Configuration: Sendable, Equatable {
        /// Bytes between two looks at progress and checkpoints.
        package var lookEveryBytes: Int64
        package var progressInterval: Duration
        package var checkpointBytes: Int64
        package var checkpointInterval: Duration

        package init(
            lookEveryBytes: Int64 = 256 * 1024, progressInterval: Duration = .milliseconds(250),
            checkpointBytes: Int64 = 16 << 20, checkpointInterval: Duration = .seconds(1)
        ) {
            self.lookEveryBytes = lookEveryBytes
            self.progressInterval = progressInterval
            self.checkpointBytes = checkpointBytes
            self.checkpointInterval = checkpointInterval
        }
    }

    /// What to do after bytes were written.
    package enum Action: Sendable, Equatable {
        /// Nothing: carry on.
        case none
        /// Report progress.
        case reportProgress
        /// Make the bytes held durable (fsync, then the record), and report progress.
        case checkpoint
    }

    package let configuration: Configuration
    private var sinceLook: Int64 = 0
    /// When the last look was (from the run's start).
    private var lastLook: Duration = .zero
    private var lastProgress: Duration?
    private var lastCheckpointHeld: Int64
    private var lastCheckpointAt: Duration = .zero

    /// Bookkeeping of a run that starts with `held` bytes held (durable already).
    package init(_ configuration: Configuration, held: Int64 = 0) {
        self.configuration = configuration
        self.lastCheckpointHeld = held
    }

    /// A request is going out with `held` bytes held: from none, the next checkpoint counts from byte 0.
    package mutating func requestSent(held: Int64) {
        if held == 0 { lastCheckpointHeld = 0 }
    }

    /// `count` bytes were written, which makes `held` bytes held; `elapsed` is the time since the run began.
    package mutating func wrote(_ count: Int64, held: Int64, elapsed: Duration) -> Action {
        sinceLook += count
        // By bytes on a fast link; by time on a slow one, whose progress would otherwise stand still (and its bytes
        // stay unsynced) for as long as the bytes of one look take to come: 256 KiB at 5 KiB/s is 50 seconds.
        guard sinceLook >= configuration.lookEveryBytes || elapsed - lastLook >= configuration.progressInterval else { return .none }
        sinceLook = 0
        lastLook = elapsed
        let unsynced = held - lastCheckpointHeld
        // A slow link too is checkpointed every interval while it holds unsynced bytes: `kill -9` loses at most that
        // interval's bytes, whatever the rate (waiting for a look's 256 KiB lost 25 s at 10 KiB/s). The cost is one
        // fsync a second per slow download; a fast one reaches a checkpoint's bytes first.
        if unsynced >= configuration.checkpointBytes || (elapsed - lastCheckpointAt >= configuration.checkpointInterval && unsynced > 0) {
            lastCheckpointHeld = held
            lastCheckpointAt = elapsed
            lastProgress = elapsed
            return .checkpoint
        }
        if let last = lastProgress, elapsed - last < configuration.progressInterval { return .none }
        lastProgress = elapsed
        return .reportProgress
    }
}
