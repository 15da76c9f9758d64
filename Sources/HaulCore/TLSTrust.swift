/// Which TLS servers a download trusts and which client certificate it shows, as curl takes them: the
/// system's trust store by default; `--cacert FILE` / `--capath DIR` (else `SSL_CERT_FILE` / `SSL_CERT_DIR`)
/// instead of it; `--insecure` to verify nothing; `--cert FILE --key FILE` for a client certificate.
/// Paths are kept as given (make them absolute before a task travels to the daemon).
public struct TLSTrust: Codable, Equatable, Hashable, Sendable {
    /// PEM file of the certificate authorities to trust, instead of the system's.
    public var caFile: String?
    /// Folder of CA certificates in OpenSSL's hashed layout (`openssl rehash`), instead of the system's.
    public var caDirectory: String?
    /// Skip certificate verification altogether (`-k`): the connection is encrypted but to anyone.
    public var insecure = false
    /// PEM client certificate (may hold the key too).
    public var clientCertificate: String?
    /// PEM private key of the client certificate (default: read from ``clientCertificate``).
    public var clientKey: String?

    /// Trust with these settings; with none, the system's CAs are trusted and certificates verified.
    public init(caFile: String? = nil, caDirectory: String? = nil, insecure: Bool = false,
                clientCertificate: String? = nil, clientKey: String? = nil) {
        self.caFile = caFile
        self.caDirectory = caDirectory
        self.insecure = insecure
        self.clientCertificate = clientCertificate
        self.clientKey = clientKey
    }

    /// The settings given, completed from `SSL_CERT_FILE` / `SSL_CERT_DIR` when neither a CA file nor a CA
    /// folder was given (OpenSSL's variables; an option wins over both, as in curl).
    public static func resolving(_ given: TLSTrust, environment: [String: String]) -> TLSTrust {
        var trust = given
        guard trust.caFile == nil, trust.caDirectory == nil else { return trust }
        trust.caFile = environment["SSL_CERT_FILE"].flatMap { $0.isEmpty ? nil : $0 }
        trust.caDirectory = environment["SSL_CERT_DIR"].flatMap { $0.isEmpty ? nil : $0 }
        return trust
    }

    /// Checks the combination (not the files: they are read when the first TLS connection is made).
    public func validate() throws(InputError) {
        if clientKey != nil, clientCertificate == nil { throw InputError("--key needs --cert: the certificate the key belongs to") }
        for (name, path) in [("--cacert", caFile), ("--capath", caDirectory), ("--cert", clientCertificate), ("--key", clientKey)] {
            if let path, path.isEmpty { throw InputError("\(name) needs a path") }
            if let path, path.utf8.contains(0) { throw InputError("the path of \(name) has a NUL byte in it") }
        }
    }

    /// These settings with every path passed through `transform` (to make them absolute).
    public func mappingPaths(_ transform: (String) -> String) -> TLSTrust {
        TLSTrust(caFile: caFile.map(transform), caDirectory: caDirectory.map(transform), insecure: insecure,
                 clientCertificate: clientCertificate.map(transform), clientKey: clientKey.map(transform))
    }

    /// The system's trust store, verified, no client certificate.
    public var isDefault: Bool { self == TLSTrust() }
}

/// What a server's certificate says about itself: enough to tell a person why it was refused.
package struct PeerCertificate: Equatable, Sendable {
    /// Validity, in seconds since 1970.
    public var notValidBefore: Int64
    public var notValidAfter: Int64
    /// Subject alternative names: DNS names and IP addresses (as text).
    public var dnsNames: [String]
    public var ipAddresses: [String]
    public var commonName: String?

    public init(notValidBefore: Int64, notValidAfter: Int64, dnsNames: [String], ipAddresses: [String], commonName: String?) {
        self.notValidBefore = notValidBefore
        self.notValidAfter = notValidAfter
        self.dnsNames = dnsNames
        self.ipAddresses = ipAddresses
        self.commonName = commonName
    }

    /// The names the certificate is valid for (alternative names, else its common name).
    public var names: [String] {
        let alternatives = dnsNames + ipAddresses
        return alternatives.isEmpty ? commonName.map { [$0] } ?? [] : alternatives
    }

    /// Whether the certificate names `host` (RFC 6125: one leftmost `*` label for DNS names; IPs exactly).
    public func matches(host rawHost: String) -> Bool {
        var host = rawHost.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host.hasSuffix(".") { host.removeLast() }
        if host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) {
            return ipAddresses.contains { $0.lowercased() == host }
        }
        let candidates = dnsNames.isEmpty ? commonName.map { [$0] } ?? [] : dnsNames
        return candidates.contains { Self.dnsName($0, matches: host) }
    }

    static func dnsName(_ rawPattern: String, matches host: String) -> Bool {
        var pattern = rawPattern.lowercased()
        if pattern.hasSuffix(".") { pattern.removeLast() }
        guard pattern.hasPrefix("*.") else { return pattern == host }
        let suffix = pattern.dropFirst(1)  // ".example.com"
        guard host.hasSuffix(suffix) else { return false }
        let label = host.dropLast(suffix.count)
        return !label.isEmpty && !label.contains(".")
    }
}

/// Why a TLS connection was refused, in the terms a person can act on.
package enum CertificateProblem: Equatable, Sendable {
    case expired(notValidAfter: Int64)
    case notYetValid(notValidBefore: Int64)
    case wrongHostName(certificateNames: [String])
    case unknownIssuer
    /// Some other handshake failure, with the library's reason in words.
    case handshake(String)

    /// The most specific problem of a certificate that failed verification for `host` at `now`:
    /// a date out of range, else a name that does not match, else an issuer that is not trusted.
    public static func diagnose(_ certificate: PeerCertificate, host: String, now: Int64) -> CertificateProblem {
        if now > certificate.notValidAfter { return .expired(notValidAfter: certificate.notValidAfter) }
        if now < certificate.notValidBefore { return .notYetValid(notValidBefore: certificate.notValidBefore) }
        if !certificate.matches(host: host) { return .wrongHostName(certificateNames: certificate.names) }
        return .unknownIssuer
    }

    /// One line naming the cause and the server (`host:port`), and what to do.
    public func message(server: String) -> String {
        switch self {
        case .expired(let date):
            return "TLS certificate of \(server) has expired (on \(HTTPDate.day(date))); refusing to connect"
        case .notYetValid(let date):
            return "TLS certificate of \(server) is not valid yet (from \(HTTPDate.day(date))); check this machine's clock"
        case .wrongHostName(let names):
            // The names come from the server: printable ASCII only and short, never terminal escapes.
            let shown = names.isEmpty ? "no name" : names.prefix(4).map(Self.printable).joined(separator: ", ")
            return "TLS certificate of \(server) is for \(shown), not this host name (wrong host name)"
        case .unknownIssuer:
            return "TLS certificate of \(server) is signed by an unknown issuer"
        case .handshake(let reason):
            return "TLS handshake with \(server) failed: \(reason)"
        }
    }

    /// `text` as it may be shown on a terminal: at most 64 characters, anything but printable ASCII as `?`.
    static func printable(_ text: String) -> String {
        let shown = String(text.unicodeScalars.prefix(64).map { (0x20..<0x7f).contains($0.value) ? Character($0) : "?" })
        return text.unicodeScalars.count > 64 ? shown + "…" : shown
    }

    /// A TLS library's error text in words: its reason code (`CERTIFICATE_VERIFY_FAILED`) lower-cased, without
    /// the source paths and line numbers such texts carry.
    public static func reason(fromLibraryText text: String) -> String {
        var reasons: [String] = []
        var rest = Substring(text)
        while let marker = rest.range(of: "OPENSSL_internal:") {
            let code = rest[marker.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            if !code.isEmpty { reasons.append(String(code.lowercased().map { $0 == "_" ? " " : $0 })) }
            rest = rest[marker.upperBound...]
        }
        if let first = reasons.first { return first }
        // No reason code: keep only letters, digits and spaces of the first words, never a path.
        let words = text.split(whereSeparator: { !$0.isLetter && !$0.isNumber }).prefix(8).joined(separator: " ")
        return words.isEmpty ? "unknown error" : words
    }
}
