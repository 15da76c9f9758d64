import struct Foundation.Date
import struct Foundation.URL
import NIOSSL

/// Turns a failed TLS handshake into one line a person can act on: the cause (expired, wrong host name, unknown
/// issuer, or the handshake's own reason) and the server, never the library's value or its source paths.
/// Certificate failures are final (exit 3 in `haul`): retrying cannot change a certificate.
enum TLSFailure {
    /// The error for `error` when it is a handshake or certificate failure, else `nil`. The certificate that was
    /// refused is fetched again directly from the server (``CertificateDiagnosis``).
    static func explain(_ error: any Error, url: URL) async -> HaulError? {
        guard let host = url.host else { return nil }
        let port = url.port ?? 443
        return await explain(error, url: url) { await CertificateDiagnosis.peerCertificate(host: bare(host), port: port) }
    }

    /// The same, with the server's certificate from `certificate`: through a proxy, the one the failed handshake
    /// itself received (connecting to the server directly would go around the proxy, and may not reach it at all).
    static func explain(_ error: any Error, url: URL, certificate: () async -> PeerCertificate?) async -> HaulError? {
        guard let host = url.host else { return nil }
        let port = url.port ?? 443
        let server = "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        let problem: CertificateProblem
        if let failure = error as? NIOSSLExtraError, failure == .failedToValidateHostname {
            let names = await certificate()?.names ?? []
            problem = .wrongHostName(certificateNames: names)
        } else if case .handshakeFailed(let library)? = error as? NIOSSLError {
            let reason = CertificateProblem.reason(fromLibraryText: String(describing: library))
            if reason == "certificate verify failed" {
                if let certificate = await certificate() {
                    problem = CertificateProblem.diagnose(certificate, host: host, now: Int64(Date().timeIntervalSince1970))
                } else {
                    problem = .handshake("its certificate could not be verified")
                }
            } else {
                problem = .handshake(reason)
            }
        } else if let failure = error as? NIOSSLError, [.failedToLoadCertificate, .failedToLoadPrivateKey, .noSuchFilesystemObject].contains(failure) {
            return HaulError(.usage, "cannot load the TLS certificates or key given (\(failure))", reason: .unusableTLSFiles)
        } else {
            return nil
        }
        if case .unknownIssuer = problem {
            return HaulError(.network, problem.message(server: server), reason: .untrustedCertificate(server: server))
        }
        return HaulError(.network, problem.message(server: server))
    }

    private static func bare(_ host: String) -> String {
        host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
    }
}
