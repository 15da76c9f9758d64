import ArgumentParser
import Foundation
import HaulKit

/// How `haul get` and `haul add` reach servers: proxies and TLS trust, as curl takes them.
struct ConnectionOptions: ParsableArguments {
    @Option(help: "Send every request through this proxy: [http://|socks5://|socks5h://][user:password@]host[:port] (default: http_proxy, https_proxy, all_proxy).")
    var proxy: String?

    @Option(help: "Hosts reached without a proxy: a comma list of names (with their subdomains), IPs, or * (default: no_proxy).")
    var noproxy: String?

    @Option(help: "Trust the CA certificates in this PEM file instead of the system's (default: SSL_CERT_FILE).")
    var cacert: String?

    @Option(help: "Trust the CA certificates in this folder (OpenSSL hashed layout) instead of the system's (default: SSL_CERT_DIR).")
    var capath: String?

    @Flag(name: [.customShort("k"), .customLong("insecure")], help: "Do not verify TLS certificates (the connection is encrypted, but to anyone).")
    var insecure = false

    @Option(help: "Client certificate (PEM) for servers that ask for one; may hold the key too.")
    var cert: String?

    @Option(help: "Private key (PEM) of --cert.")
    var key: String?

    /// The proxy settings from `--proxy`, `--noproxy` and the environment's proxy variables.
    func proxies() throws -> ProxyChoice {
        let explicit = try proxy.map { try ProxyEndpoint(parsing: $0) }
        return ProxyChoice.from(explicit: explicit, noProxy: noproxy, environment: ProcessEnvironment.values)
    }

    /// The TLS settings from the options and `SSL_CERT_FILE`/`SSL_CERT_DIR`, with absolute paths (a task may be
    /// run by the daemon, in another folder).
    func tls() throws -> TLSTrust {
        let given = TLSTrust(caFile: cacert, caDirectory: capath, insecure: insecure, clientCertificate: cert, clientKey: key)
        try given.validate()
        return TLSTrust.resolving(given, environment: ProcessEnvironment.values).mappingPaths(absolutePath)
    }

    /// Sets the download's proxies and TLS trust; checks the proxy chosen for its URL.
    func apply(to spec: inout DownloadSpec) throws {
        let proxies = try proxies()
        _ = try proxies.proxy(for: spec.url)
        spec.proxies = proxies
        let trust = try tls()
        spec.tls = trust.isDefault ? nil : trust
    }

    /// The one warning `--insecure` deserves, on stderr.
    func warnIfInsecure() {
        if insecure {
            Reporter.printError("haul: warning: --insecure: TLS certificates are not verified; anyone on the network path could impersonate the server")
        }
    }
}
