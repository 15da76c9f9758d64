import struct Foundation.URL

/// Scheme, host and port: the unit that credentials are scoped to (RFC 6454).
public struct Origin: Equatable, Hashable, Sendable {
    /// The URL's scheme, lower-cased.
    public var scheme: String
    /// The URL's host, lower-cased.
    public var host: String
    /// The URL's port, or its scheme's default (80 for `http`, 443 for `https`).
    public var port: Int

    /// The origin of `url`; `nil` when it has no scheme or host.
    public init?(_ url: URL) {
        guard let scheme = url.scheme?.lowercased(), let host = url.host?.lowercased(), !host.isEmpty else { return nil }
        let defaultPort: Int
        switch scheme {
        case "http": defaultPort = 80
        case "https": defaultPort = 443
        default: return nil
        }
        self.scheme = scheme
        self.host = host
        self.port = url.port ?? defaultPort
    }

    /// `host:port`: one server, as connections are shared and counted (two ports of one machine are two servers,
    /// and one of them may speak HTTP/2 while the other does not).
    public var authority: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }

    /// `scheme://host[:port]`, the port only when it is not the scheme's default (RFC 6454 §6.2).
    public var serialization: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let isDefault = (scheme == "http" && port == 80) || (scheme == "https" && port == 443)
        return scheme + "://" + host + (isDefault ? "" : ":\(port)")
    }

    /// The ``authority`` of `url`, or its text when it has none.
    public static func authority(of url: URL) -> String { Origin(url)?.authority ?? url.absoluteString }
}

/// How redirects are followed: at most `maxRedirects` hops, no loops, no https → http unless allowed,
/// and the user's headers only ever sent to the origin they were given for.
package struct RedirectPolicy: Equatable, Sendable {
    public enum Failure: Error, Equatable, Sendable {
        case tooManyRedirects(Int)
        case loop(String)
        case invalidLocation(String)
        case unsupportedScheme(String)
        case insecureRedirect(String)
    }

    /// Headers that say nothing about the user and may follow a redirect to another origin.
    static let crossOriginSafeHeaders: Set<String> = ["user-agent", "accept", "accept-language"]

    public var maxRedirects: Int
    public var allowInsecureRedirects: Bool

    /// The redirects a download follows unless told otherwise (curl's default is 50, wget's 20).
    public static let defaultMaxRedirects = 10

    /// The statuses whose `Location` is followed: 301, 302, 303, 307, 308, and 300 Multiple Choices naming its
    /// preferred choice (curl -L and wget follow it).
    public static let redirectStatuses: Set<Int> = [300, 301, 302, 303, 307, 308]

    public init(maxRedirects: Int = RedirectPolicy.defaultMaxRedirects, allowInsecureRedirects: Bool = false) {
        self.maxRedirects = maxRedirects
        self.allowInsecureRedirects = allowInsecureRedirects
    }

    /// The next URL after a redirect from `current` to `location`; `visited` holds every URL requested in this chain.
    /// `loopsSince`: the first of `visited` a return to counts as a loop (a redirect that set a cookie may lead back
    /// to where it came from, a download gate's way: the next request differs); all of them count toward the limit.
    public func follow(from current: URL, location: String, visited: [URL], loopsSince: Int = 0) -> Result<URL, Failure> {
        guard visited.count <= maxRedirects else { return .failure(.tooManyRedirects(maxRedirects)) }
        guard let resolved = URL(string: location, relativeTo: current)?.absoluteURL,
              var components = resolved.absoluteString.split(separator: "#", maxSplits: 1).first.map(String.init),
              let next = URL(string: components)
        else { return .failure(.invalidLocation(location)) }
        components = next.absoluteString
        guard Origin(next) != nil else { return .failure(.unsupportedScheme(next.scheme ?? location)) }
        guard URLCheck.problem(next) == nil else { return .failure(.invalidLocation(location)) }
        if current.scheme?.lowercased() == "https", next.scheme?.lowercased() == "http", !allowInsecureRedirects {
            return .failure(.insecureRedirect(components))
        }
        if visited.dropFirst(loopsSince).contains(where: { $0.absoluteString == components }) { return .failure(.loop(components)) }
        return .success(next)
    }

    /// The user's headers to send to `target`: all of them on the origin they were given for, else only harmless ones.
    public static func headers(_ user: HTTPFields, givenFor origin: Origin?, sendingTo target: Origin?) -> HTTPFields {
        if let origin, origin == target { return user }
        return HTTPFields(user.fields.filter { crossOriginSafeHeaders.contains($0.name.lowercased()) })
    }
}
