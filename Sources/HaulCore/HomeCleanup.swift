/// What `haul clean` may remove from `HAUL_HOME`, decided from what the shell found there. Never anything a
/// live download holds (its lock is taken), and never the record of an interrupted download whose partial
/// file is still there: running the same command again must resume it.
package enum HomeCleanup {
    /// A resume record (`transfers/<key>.json`).
    public struct Record: Sendable, Equatable {
        public enum Status: Sendable, Equatable {
            /// The download finished: the file is at its destination, the record only remembers that.
            case finished
            /// Not finished; `heldBytes` says whether the bytes it would resume from are still on disk.
            case unfinished(heldBytes: Bool)
            /// The record cannot be read: left for a person to look at.
            case unreadable
        }

        public var key: String
        public var status: Status
        /// The download's destination, to name it.
        public var destination: String?

        public init(key: String, status: Status, destination: String? = nil) {
            self.key = key
            self.status = status
            self.destination = destination
        }
    }

    /// A lock file (`transfers/<key>.lock`), of a destination or of a `--dir` download's choice of name.
    public struct Lock: Sendable, Equatable {
        public var key: String
        /// Another process holds it: a download is running.
        public var held: Bool
        /// For a `--dir` download's lock: the key of the record of the destination it chose (from its note).
        public var chosenRecordKey: String?

        public init(key: String, held: Bool, chosenRecordKey: String? = nil) {
            self.key = key
            self.held = held
            self.chosenRecordKey = chosenRecordKey
        }
    }

    /// A batch session of `haul get` with several URLs (`sessions/get-*`).
    public struct BatchSession: Sendable, Equatable {
        public var name: String
        /// Another process has it open.
        public var inUse: Bool
        /// The states of its tasks; `nil` when its store cannot be read.
        public var states: [TaskState]?

        public init(name: String, inUse: Bool, states: [TaskState]?) {
            self.name = name
            self.inUse = inUse
            self.states = states
        }
    }

    /// Everything found.
    public struct Inventory: Sendable, Equatable {
        public var records: [Record] = []
        public var locks: [Lock] = []
        /// Keys of leftover `transfers/<key>.json.tmp` files (a record being replaced when a process died).
        public var temporaries: [String] = []
        public var sessions: [BatchSession] = []

        public init(records: [Record] = [], locks: [Lock] = [], temporaries: [String] = [], sessions: [BatchSession] = []) {
            self.records = records
            self.locks = locks
            self.temporaries = temporaries
            self.sessions = sessions
        }
    }

    /// One thing to remove, and why.
    public enum Removal: Sendable, Equatable {
        case finishedRecord(key: String, destination: String?)
        /// An unfinished download's record whose partial file is gone: there is nothing left to resume.
        case staleRecord(key: String, destination: String?)
        case lock(key: String)
        case temporary(key: String)
        case session(name: String)
    }

    /// What to remove, and how many records were kept for unfinished or running downloads.
    public struct Plan: Sendable, Equatable {
        public var removals: [Removal] = []
        /// Records left because a download is running, or was interrupted and can resume, or cannot be read.
        public var keptRecords = 0
        /// Batch sessions left because they are open or have a task that is not finished.
        public var keptSessions = 0
    }

    /// Decides. A key whose lock is held belongs to a running download: its record, temporary file and lock stay.
    public static func plan(_ inventory: Inventory) -> Plan {
        var plan = Plan()
        let held = Set(inventory.locks.filter(\.held).map(\.key))
        var keptRecords: Set<String> = []
        for record in inventory.records.sorted(by: { $0.key < $1.key }) {
            if held.contains(record.key) {
                keptRecords.insert(record.key)
                continue
            }
            switch record.status {
            case .unreadable, .unfinished(heldBytes: true):
                keptRecords.insert(record.key)
            case .finished:
                plan.removals.append(.finishedRecord(key: record.key, destination: record.destination))
            case .unfinished(heldBytes: false):
                plan.removals.append(.staleRecord(key: record.key, destination: record.destination))
            }
        }
        plan.keptRecords = keptRecords.count
        for key in inventory.temporaries.sorted() where !held.contains(key) {
            plan.removals.append(.temporary(key: key))
        }
        for lock in inventory.locks.sorted(by: { $0.key < $1.key }) where !lock.held {
            // A lock beside a record that stays, or remembering the name of one that stays, is still needed.
            if keptRecords.contains(lock.key) { continue }
            if let chosen = lock.chosenRecordKey, keptRecords.contains(chosen) || held.contains(chosen) { continue }
            plan.removals.append(.lock(key: lock.key))
        }
        for session in inventory.sessions.sorted(by: { $0.name < $1.name }) {
            if !session.inUse, let states = session.states, states.allSatisfy({ $0 == .finished || $0 == .cancelled }) {
                plan.removals.append(.session(name: session.name))
            } else {
                plan.keptSessions += 1
            }
        }
        return plan
    }
}
