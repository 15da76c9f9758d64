import NIOConcurrencyHelpers

/// The names `--dir` tasks had chosen (or not) when their start was written, read in the start's transaction, each
/// kept until its download first asks for it: that download would otherwise read the same row again, in a read
/// transaction of its own, moments later.
///
/// A hint is only ever the row as committed: every write of a choice forgets its hint first, and a hint is taken
/// once, so a later look reads the store. At most ``limit`` are kept (tasks that end before they look leave theirs
/// behind): past that, all are dropped, and their downloads read the store as before.
final class ChoiceHints: Sendable {
    static let limit = 4096

    /// By key: the path chosen, or `nil` for none.
    private let hints = NIOLockedValueBox<[String: String?]>([:])

    /// Keeps what the store held under `key` (`nil`: no name chosen yet).
    func keep(_ key: String, _ path: String?) {
        hints.withLockedValue { hints in
            if hints.count >= Self.limit { hints.removeAll() }
            hints[key] = .some(path)
        }
    }

    /// The hint for `key`, taken: `.some(path)` (`path` may be `nil`: none chosen), or `nil` when there is none.
    func take(_ key: String) -> String?? {
        hints.withLockedValue { $0.removeValue(forKey: key) }
    }

    /// Drops the hint for `key` (its row is being written).
    func forget(_ key: String) {
        _ = hints.withLockedValue { $0.removeValue(forKey: key) }
    }
}
