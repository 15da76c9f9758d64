/// The modification time a finished file takes from the server, as `curl -R` and wget do: the response's
/// `Last-Modified`, so that a downloaded file keeps the date it has on the server.
package enum RemoteTime {
    /// Seconds since the Unix epoch to set as the file's modification time, or `nil` to leave the local time
    /// (no `Last-Modified`, or one that is not an HTTP-date).
    public static func modificationTime(lastModified: String?) -> Int64? {
        guard let text = lastModified?.trimmingASCIIWhitespace(), !text.isEmpty else { return nil }
        return HTTPDate.parse(text)
    }
}
