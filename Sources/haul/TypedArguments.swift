import ArgumentParser
import HaulKit
import NIOConcurrencyHelpers

/// An option's value that one of HaulCore's parsers reads: the parser's refusal is the line a person sees.
///
/// ArgumentParser's `init?(argument:)` can only say no; these types record why (``ArgumentRefusals``), and
/// ``UsageError`` prints that reason, naming the option as it was typed, instead of the parser's generic words.
protocol CheckedArgument: ExpressibleByArgument {
    /// The value `text` spells; the error says what is wrong with it and what is expected.
    init(parsing text: String) throws(InputError)
}

extension CheckedArgument {
    init?(argument: String) { self.init(checking: argument) }

    /// `argument` parsed, or nil with the reason recorded for the parse running in this task.
    init?(checking argument: String) {
        do {
            self = try Self(parsing: argument)
        } catch {
            ArgumentRefusals.current?.record(argument, error)
            return nil
        }
    }
}

/// Why the value a ``CheckedArgument`` refused during one parse was refused (ArgumentParser stops at the first).
/// ``UsageError/parsing(_:)`` makes one for each parse, bound to its task, so two parses never share one.
final class ArgumentRefusals: Sendable {
    /// The refused text and why.
    struct Record: Sendable {
        var text: String
        var error: InputError
    }

    /// The record of the parse running in this task, if any.
    @TaskLocal static var current: ArgumentRefusals?

    private let refusal = NIOLockedValueBox<Record?>(nil)

    func record(_ text: String, _ error: InputError) {
        refusal.withLockedValue { $0 = Record(text: text, error: error) }
    }

    /// The last refusal.
    var last: Record? { refusal.withLockedValue { $0 } }
}

/// A size such as `--min-segment-size 1M`: `500K`, `1.5M`, `2MiB`, `1G`, `65536` (K = 1024; `UserInput.byteCount`).
struct ByteCount: CheckedArgument, Equatable {
    var bytes: Int64

    init(bytes: Int64) { self.bytes = bytes }

    init(parsing text: String) throws(InputError) {
        bytes = try UserInput.byteCount(text)
    }
}

/// A speed such as `--limit-rate 2M`, in bytes per second: the spellings of a size, and of curl, wget and aria2c
/// (`500k`, `2M`, `1.5MiB/s`, `65536`; K = 1024).
struct ByteRate: CheckedArgument, Equatable {
    var bytesPerSecond: Int64

    init(bytesPerSecond: Int64) { self.bytesPerSecond = bytesPerSecond }

    init(parsing text: String) throws(InputError) {
        bytesPerSecond = try UserInput.byteCount(text)
    }
}

/// `session set --limit-rate`: a speed, or `none` (also `0`, `off`, `unlimited`) to remove the session's limit.
enum RateLimitChange: CheckedArgument, Equatable {
    case unlimited
    case limit(ByteRate)

    /// The words that remove a limit.
    static let noLimitWords: Set<String> = ["none", "0", "off", "unlimited"]

    init(parsing text: String) throws(InputError) {
        self = Self.noLimitWords.contains(text.lowercased()) ? .unlimited : .limit(try ByteRate(parsing: text))
    }
}

/// A number of seconds such as `--stall-timeout 30` or `--retry-wait 0.5`: any finite number (each command says
/// which range it takes).
struct Seconds: CheckedArgument, Equatable {
    var value: Double

    init(_ value: Double) { self.value = value }

    init(parsing text: String) throws(InputError) {
        guard let value = Double(text), value.isFinite else {
            throw InputError("\"\(text.prefix(40))\" is not a number of seconds (e.g. 30 or 0.5)")
        }
        self.value = value
    }

    /// The same time as a `Duration`, to the millisecond.
    var duration: Duration { .milliseconds(Int64(value * 1_000)) }

    /// A year: what a timeout of 0 ("no limit", as curl's and wget's) stands for where a time is needed. Far longer
    /// than any transfer waits, short enough that deadlines computed from it never overflow.
    static let noLimit = Seconds(365 * 86_400)

    /// This time, or ``noLimit`` when it is 0.
    var zeroMeaningNoLimit: Seconds { value == 0 ? Self.noLimit : self }

    var defaultValueDescription: String { String(value) }
}

/// `-s`/`--segments`/`--split`: connections for one file (aria2c's `-s`). curl users mean `--silent` by `-s`, so
/// anything but a number says where curl's `-s` is.
struct SegmentCount: CheckedArgument, Equatable {
    var value: Int

    init(_ value: Int) { self.value = value }

    init(parsing text: String) throws(InputError) {
        guard let value = Int(text) else {
            throw InputError("-s/--segments takes a number of connections for one file (aria2c's -s), not \"\(text.prefix(40))\"; for curl's -s (silent) use -q")
        }
        self.value = value
    }
}

/// `-x`/`--max-connections-per-host`: connections to one host (aria2c's `-x`). curl users give `-x` a proxy, so
/// anything but a number says where curl's `-x` is (the value is shown without its password).
struct HostConnectionCount: CheckedArgument, Equatable {
    var value: Int

    init(_ value: Int) { self.value = value }

    init(parsing text: String) throws(InputError) {
        guard let value = Int(text) else {
            throw InputError("-x takes a number of connections per host (aria2c's -x), not \"\(Redaction.url(String(text.prefix(60))))\"; for a proxy (curl's -x) use --proxy HOST:PORT")
        }
        self.value = value
    }
}

/// A count that may also be `none` (no limit), such as `session set --fleet-max-per-host`.
enum CountOrNone: CheckedArgument, Equatable {
    /// `none`: no limit.
    case unlimited
    case count(Int)

    init(parsing text: String) throws(InputError) {
        if text.lowercased() == "none" {
            self = .unlimited
        } else if let count = Int(text) {
            self = .count(count)
        } else {
            throw InputError("\"\(text.prefix(40))\" is neither a number nor none")
        }
    }
}

/// `haul daemon --web [HOST:]PORT`: where the dashboard listens (the host defaults to loopback).
struct ListenAddress: CheckedArgument, Equatable {
    var host: String
    var port: Int

    init(host: String, port: Int) {
        self.host = host
        self.port = port
    }

    init(parsing text: String) throws(InputError) {
        guard let (host, port) = WebListenPolicy.parseAddress(text) else {
            throw InputError("--web takes [HOST:]PORT, e.g. 7711 or 127.0.0.1:7711")
        }
        self.init(host: host, port: port)
    }
}

/// `--checksum ALG:HEX` (or aria2c's `sha-256=HEX`), checked as the list's `checksum=` lines are.
extension Checksum: CheckedArgument {
    // A public type's witness is public.
    public init?(argument: String) { self.init(checking: argument) }
}

/// `--proxy [scheme://][user:password@]host[:port]` (curl's `-x` is `--proxy` here); a refusal never shows the password.
extension ProxyEndpoint: CheckedArgument {
    // A public type's witness is public.
    public init?(argument: String) { self.init(checking: argument) }
}
