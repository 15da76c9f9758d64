/// wget's `-N` (`--timestamping`): fetch a file again only when the server's copy is newer than the local one. The
/// request carries `If-Modified-Since` with the local file's time; a `304 Not Modified`, or a `200` whose
/// `Last-Modified` is not newer and whose length equals the local file's (a server that ignores the condition),
/// leaves the local file as it is.
public enum Timestamping {
    /// The `If-Modified-Since` value for a local file last modified at `localTime` (seconds since 1970).
    public static func ifModifiedSince(localTime: Int64) -> String {
        HTTPDate.format(max(0, localTime))
    }

    /// Whether the answer (`status`, with its `Last-Modified` and `Content-Length`) leaves a local file of
    /// `localSize` bytes modified at `localTime` as it is.
    public static func isUnchanged(status: Int, lastModified: String?, contentLength: Int64?, localTime: Int64, localSize: Int64) -> Bool {
        if status == 304 { return true }
        guard status == 200, let lastModified, let remote = HTTPDate.parse(lastModified) else { return false }
        return remote <= localTime && contentLength == localSize
    }
}
