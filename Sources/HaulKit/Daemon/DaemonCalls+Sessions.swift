import Foundation

// The daemon's other methods (docs/protocol.md): the daemon itself, sessions and their settings, events and the
// journal, the web dashboard and the fleet; each with its parameters and its result.

/// The parameters of a method that takes none (beside `session`).
package struct NoParameters: Codable, Sendable, Equatable {
    public init() {}
    /// Anything is accepted: members are ignored.
    public init(from decoder: any Decoder) throws {}
    public func encode(to encoder: any Encoder) throws { _ = encoder.container(keyedBy: NoKeys.self) }
    private enum NoKeys: CodingKey {}
}

/// `daemon.hello`: the protocol the client speaks; the daemon answers with its own, its version and process id.
package enum Hello: DaemonCall {
    public static let method = DaemonMethod.hello

    public struct Parameters: Codable, Sendable, Equatable {
        public var protocolVersion: Int
        /// Who is calling (`haul-cli`, `haulkit`), for the daemon's log.
        public var client: String?

        public init(protocolVersion: Int = DaemonProtocol.version, client: String?) {
            self.protocolVersion = protocolVersion
            self.client = client
        }

        private enum CodingKeys: String, CodingKey {
            case protocolVersion = "protocol"
            case client
        }
    }

    public struct Result: Codable, Sendable, Equatable {
        public var protocolVersion: Int
        /// This haul's version.
        public var version: String
        public var pid: Int

        public init(protocolVersion: Int, version: String, pid: Int) {
            self.protocolVersion = protocolVersion
            self.version = version
            self.pid = pid
        }

        private enum CodingKeys: String, CodingKey {
            case protocolVersion = "protocol"
            case version, pid
        }
    }
}

/// `daemon.status`: `daemon.hello`'s answer and the open sessions.
package enum DaemonStatus: DaemonCall {
    public static let method = DaemonMethod.status
    public typealias Parameters = NoParameters

    public struct Result: Codable, Sendable, Equatable {
        public var protocolVersion: Int
        public var version: String
        public var pid: Int
        /// The sessions open now, sorted.
        public var sessions: [String]

        public init(_ identity: Hello.Result, sessions: [String]) {
            protocolVersion = identity.protocolVersion
            version = identity.version
            pid = identity.pid
            self.sessions = sessions
        }

        private enum CodingKeys: String, CodingKey {
            case protocolVersion = "protocol"
            case version, pid, sessions
        }
    }
}

/// `session.open`: opens (creating) a session, applying the members of `configuration` present (the
/// Configuration object of docs/protocol.md, checked by `DaemonProtocol.apply`).
package enum OpenSession: DaemonCall {
    public static let method = DaemonMethod.openSession

    public struct Parameters: Codable, Sendable, Equatable {
        public var configuration: [String: JSONValue]?

        public init(configuration: [String: JSONValue]?) { self.configuration = configuration }
    }

    public struct Result: Codable, Sendable, Equatable {
        public var session: String

        public init(session: String) { self.session = session }
    }
}

/// `session.setMaxConcurrentDownloads`.
package enum SetMaxConcurrentDownloads: DaemonCall {
    public static let method = DaemonMethod.setMaxConcurrentDownloads

    public struct Parameters: Codable, Sendable, Equatable {
        /// 0 or more (0 pauses the queue).
        public var count: Int

        public init(count: Int) { self.count = count }
    }

    public typealias Result = NoResult
}

/// `session.setRateLimit`: `bytesPerSecond` is required, `null` for none.
package enum SetRateLimit: DaemonCall {
    public static let method = DaemonMethod.setRateLimit

    public struct Parameters: Codable, Sendable, Equatable {
        public var bytesPerSecond: Int64?

        public init(bytesPerSecond: Int64?) { self.bytesPerSecond = bytesPerSecond }

        private enum CodingKeys: String, CodingKey { case bytesPerSecond }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(bytesPerSecond, forKey: .bytesPerSecond)  // null for none, never left out
        }
    }

    public typealias Result = NoResult
}

/// `session.configuration`: the saved Configuration object (default headers' values hidden) and `store`.
package enum SessionSettings: DaemonCall {
    public static let method = DaemonMethod.sessionConfiguration
    public typealias Parameters = NoParameters
    public typealias Result = [String: JSONValue]
}

/// `events.subscribe`: events of the session are sent to this connection from now on; with `replay` (the
/// default) the answer holds the journal's first page.
package enum Subscribe: DaemonCall {
    public static let method = DaemonMethod.subscribe

    public struct Parameters: Codable, Sendable, Equatable {
        public var replay: Bool?

        public init(replay: Bool?) { self.replay = replay }
    }

    public struct Result: Codable, Sendable, Equatable {
        /// Journal entries as events (with `seq`).
        public var journal: [JSONValue]
        /// The `after` of the next page of `journal.list`; `null` when this was all.
        public var next: Int64?

        public init(journal: [JSONValue], next: Int64?) {
            self.journal = journal
            self.next = next
        }

        private enum CodingKeys: String, CodingKey { case journal, next }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(journal, forKey: .journal)
            try container.encode(next, forKey: .next)
        }
    }
}

/// `events.unsubscribe`.
package enum Unsubscribe: DaemonCall {
    public static let method = DaemonMethod.unsubscribe
    public typealias Parameters = NoParameters
    public typealias Result = NoResult
}

/// `journal.list`: a page of journal entries after `after`.
package enum ListJournal: DaemonCall {
    public static let method = DaemonMethod.listJournal

    public struct Parameters: Codable, Sendable, Equatable {
        public var after: Int64?
        public var limit: Int?

        public init(after: Int64?, limit: Int?) {
            self.after = after
            self.limit = limit
        }
    }

    public struct Result: Codable, Sendable, Equatable {
        public var events: [JSONValue]
        /// The `after` of the next page; `null` after the last one.
        public var next: Int64?

        public init(events: [JSONValue], next: Int64?) {
            self.events = events
            self.next = next
        }

        private enum CodingKeys: String, CodingKey { case events, next }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(events, forKey: .events)
            try container.encode(next, forKey: .next)
        }
    }
}

/// `journal.ack`: the entries of tasks `ids`, or every entry through sequence `through`.
package enum AcknowledgeJournal: DaemonCall {
    public static let method = DaemonMethod.acknowledgeJournal

    public struct Parameters: Codable, Sendable, Equatable {
        public var ids: [String]?
        public var through: Int64?

        public init(ids: [String]) { self.ids = ids }
        public init(through: Int64) { self.through = through }
    }

    public struct Result: Codable, Sendable, Equatable {
        /// How many entries were acknowledged.
        public var acknowledged: Int

        public init(acknowledged: Int) { self.acknowledged = acknowledged }
    }
}

/// `web.start` (Unix socket only): starts the dashboard's listener and mints a login link.
package enum StartWeb: DaemonCall {
    public static let method = DaemonMethod.startWeb

    public struct Parameters: Codable, Sendable, Equatable {
        public var host: String?
        public var port: Int?

        public init(host: String?, port: Int?) {
            self.host = host
            self.port = port
        }
    }

    public struct Result: Codable, Sendable, Equatable {
        public var url: String
        public var login: String

        public init(url: String, login: String) {
            self.url = url
            self.login = login
        }
    }
}

/// `fleet.nodes`: the fleet's daemons with the tasks each runs (one machine: this daemon).
package enum FleetNodes: DaemonCall {
    public static let method = DaemonMethod.fleetNodes
    public typealias Parameters = NoParameters

    public struct Result: Codable, Sendable, Equatable {
        /// Where the fleet's store is (`null` on one machine).
        public var store: String?
        /// This daemon's node name (`null` on one machine).
        public var node: String?
        public var nodes: [Wire<FleetNode>]

        public init(store: String?, node: String?, nodes: [FleetNode]) {
            self.store = store
            self.node = node
            self.nodes = nodes.map(Wire.init)
        }

        private enum CodingKeys: String, CodingKey { case store, node, nodes }

        public init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            store = try container.decodeIfPresent(String.self, forKey: .store)
            node = try container.decodeIfPresent(String.self, forKey: .node)
            nodes = try container.decodeIfPresent([Wire<FleetNode>].self, forKey: .nodes) ?? []
        }

        public func encode(to encoder: any Encoder) throws {
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(store, forKey: .store)
            try container.encode(node, forKey: .node)
            try container.encode(nodes, forKey: .nodes)
        }
    }
}
