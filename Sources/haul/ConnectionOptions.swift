import ArgumentParser
import Foundation
import HaulKit

/// How `haul get` and `haul add` reach servers: proxies and TLS trust, as curl takes them.
struct ConnectionOptions: ParsableArguments {
    @Option(name: [.long, .customLong("all-proxy")], help: "Send every request through this proxy: [http://|socks5://|socks5h://][user:password@]host[:port] (default: http_proxy, https_proxy, all_proxy). Plain http:// URLs go to an HTTP proxy as they are; https:// ones through a CONNECT tunnel.")
    var proxy: ProxyEndpoint?

    @Option(help: "Hosts reached without a proxy: a comma list of names (with their subdomains), IPs, CIDR ranges such as 10.0.0.0/8, or * (default: no_proxy).")
    var noproxy: String?

    @Flag(help: "Tunnel plain http:// URLs through an HTTP proxy with CONNECT too (as curl --proxytunnel).")
    var proxytunnel = false

    @Flag(name: [.customShort("4"), .customLong("ipv4"), .customLong("inet4-only")], help: "Connect over IPv4 only.")
    var ipv4 = false

    @Flag(name: [.customShort("6"), .customLong("ipv6"), .customLong("inet6-only")], help: "Connect over IPv6 only.")
    var ipv6 = false

    @Option(name: [.customLong("cacert"), .customLong("ca-certificate")], help: "Trust the CA certificates in this PEM file instead of the system's (default: SSL_CERT_FILE; --ca-certificate as in wget and aria2c).")
    var cacert: String?

    @Option(name: [.customLong("capath"), .customLong("ca-directory")], help: "Trust the CA certificates in this folder (OpenSSL hashed layout) instead of the system's (default: SSL_CERT_DIR; --ca-directory as in wget).")
    var capath: String?

    @Flag(name: [.customShort("k"), .customLong("insecure"), .customLong("no-check-certificate")], help: "Do not verify TLS certificates (the connection is encrypted, but to anyone).")
    var insecure = false

    @Option(name: [.customLong("cert"), .customLong("certificate")], help: "Client certificate (PEM) for servers that ask for one; may hold the key too (--certificate as in wget and aria2c).")
    var cert: String?

    @Option(name: [.customLong("key"), .customLong("private-key")], help: "Private key (PEM) of --cert (--private-key as in wget and aria2c).")
    var key: String?

    /// The flags that cannot go together and the TLS files' paths, before anything runs.
    func validate() throws {
        if ipv4, ipv6 { throw InputError("use either -4 or -6, not both") }
        try givenTLS.validate()
    }

    /// The proxy settings from `--proxy`, `--noproxy` and the environment's proxy variables.
    var proxies: ProxyChoice {
        ProxyChoice.from(explicit: proxy, noProxy: noproxy, environment: ProcessEnvironment.values)
    }

    /// The TLS settings as the flags give them.
    private var givenTLS: TLSTrust {
        TLSTrust(caFile: cacert, caDirectory: capath, insecure: insecure, clientCertificate: cert, clientKey: key)
    }

    /// The TLS settings from the options and `SSL_CERT_FILE`/`SSL_CERT_DIR`, with absolute paths (a task may be
    /// run by the daemon, in another folder). Checked by ``validate()``.
    var tls: TLSTrust {
        TLSTrust.resolving(givenTLS, environment: ProcessEnvironment.values).mappingPaths(absolutePath)
    }

    /// Sets the download's proxies and TLS trust; checks the proxy chosen for its URL.
    func apply(to spec: inout DownloadSpec) throws {
        let proxies = proxies
        _ = try proxies.proxy(for: spec.url)
        spec.proxies = proxies
        if proxytunnel { spec.proxyTunnel = true }
        spec.ipFamily = ipv4 ? .v4 : ipv6 ? .v6 : nil
        let trust = tls
        spec.tls = trust.isDefault ? nil : trust
    }

    /// The one warning `--insecure` deserves, on stderr.
    func warnIfInsecure() {
        if insecure {
            Reporter.printError("haul: warning: --insecure: TLS certificates are not verified; anyone on the network path could impersonate the server")
        }
    }
}
