import Foundation

// The methods on a session's tasks (docs/protocol.md, "Tasks"): each with its parameters and its result.

/// `tasks.add`: adds tasks (a session that does not exist is created); answers their ids, and the tasks themselves
/// unless `reply` is `"ids"` or they would not fit one line.
package enum AddTasks: DaemonCall {
    public static let method = DaemonMethod.addTasks

    public struct Parameters: Codable, Sendable, Equatable {
        /// The Add objects (``Addition``), at most ``DaemonProtocol/maxTasksPerAdd``.
        public var tasks: [Addition]
        /// `"tasks"` (the default) or `"ids"`.
        public var reply: String?

        public init(tasks: [Addition], reply: String? = nil) {
            self.tasks = tasks
            self.reply = reply
        }

        private enum CodingKeys: String, CodingKey { case tasks, reply }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            let refusal = RPCError.invalidParams("\"tasks\" must be a non-empty array of objects")
            if let raw = try container.decodeIfPresent(JSONValue.self, forKey: .tasks), raw.arrayValue == nil {
                throw RPCError.invalidParams("\"tasks\" must be an array of objects")
            }
            guard let tasks = try container.decodeIfPresent([Addition].self, forKey: .tasks), !tasks.isEmpty else { throw refusal }
            self.tasks = tasks
            reply = try container.decodeIfPresent(String.self, forKey: .reply)
        }
    }

    /// One Add object: a ``DownloadSpec`` in its JSON shape with `priority` and `id`. Kept as JSON until the
    /// daemon has checked the addition as a whole; ``request()`` reads it.
    public struct Addition: Codable, Sendable, Equatable {
        public var members: [String: JSONValue]

        public init(_ request: DownloadRequest) { members = DaemonProtocol.encode(request).objectValue ?? [:] }

        public init(members: [String: JSONValue]) { self.members = members }

        public init(from decoder: any Decoder) throws {
            members = try [String: JSONValue](from: decoder)
        }

        public func encode(to encoder: any Encoder) throws { try members.encode(to: encoder) }

        /// The request this object describes, checked as ``DaemonProtocol/decodeRequest(_:)`` checks it.
        public func request() throws(RPCError) -> DownloadRequest { try DaemonProtocol.decodeRequest(Params(members)) }
    }

    public struct Result: Codable, Sendable, Equatable {
        /// The tasks' ids, in the order added (an existing task's id when it was already there).
        public var ids: [String]
        /// The tasks, unless left out.
        public var tasks: [WireTask]?

        public init(ids: [String], tasks: [WireTask]? = nil) {
            self.ids = ids
            self.tasks = tasks
        }
    }
}

/// `tasks.list`: a page of the session's tasks in the order added (only those of `ids` when given).
package enum ListTasks: DaemonCall {
    public static let method = DaemonMethod.listTasks

    public struct Parameters: Codable, Sendable, Equatable {
        public var ids: [String]?
        /// At most this many tasks (1 to ``DaemonProtocol/maxPageLimit``).
        public var limit: Int?
        /// The `next` of the previous page.
        public var cursor: String?

        public init(ids: [String]? = nil, limit: Int? = nil, cursor: String? = nil) {
            self.ids = ids
            self.limit = limit
            self.cursor = cursor
        }
    }

    public struct Result: Codable, Sendable, Equatable {
        public var tasks: [WireTask]
        /// The cursor of the following page; `null` after the last one.
        public var next: String?

        public init(tasks: [WireTask], next: String?) {
            self.tasks = tasks
            self.next = next
        }

        private enum CodingKeys: String, CodingKey { case tasks, next }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(tasks, forKey: .tasks)
            try container.encode(next, forKey: .next)  // null after the last page
        }
    }
}

/// `tasks.pause`.
package enum PauseTasks: DaemonCall {
    public static let method = DaemonMethod.pauseTasks
    public typealias Parameters = SelectedTasks
    public typealias Result = NoResult
}

/// `tasks.resume`.
package enum ResumeTasks: DaemonCall {
    public static let method = DaemonMethod.resumeTasks
    public typealias Parameters = SelectedTasks
    public typealias Result = NoResult
}

/// `tasks.cancel`.
package enum CancelTasks: DaemonCall {
    public static let method = DaemonMethod.cancelTasks
    public typealias Parameters = SelectedTasks
    public typealias Result = NoResult
}

/// `tasks.remove`: cancels running ones and deletes partial data (and with `deleteFile`, finished files): only files
/// the task wrote itself and still at their names; the answer says what was kept, given back or deleted.
package enum RemoveTasks: DaemonCall {
    public static let method = DaemonMethod.removeTasks

    public struct Parameters: Codable, Sendable, Equatable {
        /// The tasks to remove.
        public var selection: SelectedTasks
        /// Also delete the files of finished tasks.
        public var deleteFile: Bool?

        public init(_ selection: SelectedTasks, deleteFile: Bool? = nil) {
            self.selection = selection
            self.deleteFile = deleteFile
        }

        private enum CodingKeys: String, CodingKey { case deleteFile }

        public init(from decoder: any Decoder) throws {
            selection = try SelectedTasks(from: decoder)
            deleteFile = try decoder.container(keyedBy: CodingKeys.self).decodeIfPresent(Bool.self, forKey: .deleteFile)
        }

        public func encode(to encoder: any Encoder) throws {
            try selection.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encodeIfPresent(deleteFile, forKey: .deleteFile)
        }
    }

    /// What was done with the removed tasks' files, where there is something to say (absent from older daemons).
    public struct Result: Codable, Sendable, Equatable {
        /// Each file deleted (`deleteFile`), kept (not the task's own), or given back (a `--continue` file).
        public var files: [RemovedFile]?

        public init(files: [RemovedFile]? = nil) {
            self.files = files
        }
    }
}

/// `tasks.setPriority`: `ids` only (`all` is refused).
package enum SetPriority: DaemonCall {
    public static let method = DaemonMethod.setPriority

    public struct Parameters: Codable, Sendable, Equatable {
        public var priority: Int
        public var all: Bool?
        public var ids: [String]?

        public init(priority: Int, ids: [String]) {
            self.priority = priority
            self.ids = ids
        }

        /// The tasks named.
        public var selection: SelectedTasks { SelectedTasks(all: all, ids: ids) }
    }

    public typealias Result = NoResult
}

/// `tasks.segments`: where a task's bytes are.
package enum TaskSegments: DaemonCall {
    public static let method = DaemonMethod.segments

    public struct Parameters: Codable, Sendable, Equatable {
        public var id: String

        public init(id: String) { self.id = id }
    }

    /// `{"id", "total", "done": [[start, end]], "active": [[start, end]]}`.
    public struct Result: Codable, Sendable, Equatable {
        public var id: String
        public var total: Int64?
        public var done: [[Int64]]
        public var active: [[Int64]]

        public init(_ map: SegmentMap, id: String) {
            self.id = id
            total = map.total
            done = map.done.map { [$0.start, $0.end] }
            active = map.active.map { [$0.start, $0.end] }
        }

        private enum CodingKeys: String, CodingKey { case id, total, done, active }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(id, forKey: .id)
            try container.encode(total, forKey: .total)  // null while unknown
            try container.encode(done, forKey: .done)
            try container.encode(active, forKey: .active)
        }
    }
}
