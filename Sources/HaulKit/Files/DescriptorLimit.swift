#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// This process's limit on open descriptors (`RLIMIT_NOFILE`).
public enum DescriptorLimit {
    /// The most ``raise()`` sets the soft limit to: room for tens of thousands of connections and files.
    static let ceiling = 65_536

    #if os(Linux)
    private static let resource = __rlimit_resource_t(RLIMIT_NOFILE.rawValue)
    #else
    private static let resource = RLIMIT_NOFILE
    #endif

    /// The soft limit in force (`Int.max`: none).
    public static var soft: Int {
        var limit = rlimit()
        // RLIM_INFINITY is all ones.
        guard getrlimit(resource, &limit) == 0, limit.rlim_cur != rlim_t.max else { return .max }
        return Int(clamping: limit.rlim_cur)
    }

    /// Raises the soft limit toward the hard one, to at most ``ceiling``, as Go's runtime does for every program.
    /// Systems keep a soft limit of 1,024 for programs that still use `select()`, which Haul does not; a list over
    /// a thousand hosts, or a daemon with many clients and downloads, needs more. Never lowers it. The soft limit
    /// in force afterwards.
    @discardableResult
    public static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(resource, &limit) == 0 else { return soft }
        let wanted = min(limit.rlim_max, rlim_t(ceiling))
        guard limit.rlim_cur < wanted else { return soft }
        // macOS refuses more than OPEN_MAX (10,240) whatever its hard limit says: then that much.
        for value in [wanted, min(wanted, 10_240)] where value > limit.rlim_cur {
            var raised = limit
            raised.rlim_cur = value
            if setrlimit(resource, &raised) == 0 { break }
        }
        return soft
    }
}
