import Foundation
import NIOSSL

extension TLSTrust {
    /// The TLS configuration these settings describe, reading the CA and client certificate files now so that a
    /// missing or unreadable one is reported by name (a usage error), not as a failed connection.
    func makeConfiguration() throws(HaulError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.shutdownTimeout = TransferEngine.tlsShutdownTimeout
        if insecure { configuration.certificateVerification = .none }
        var caFileCertificates: [NIOSSLCertificate] = []
        if let caFile {
            do {
                caFileCertificates = try NIOSSLCertificate.fromPEMFile(caFile)
                guard !caFileCertificates.isEmpty else { throw NIOSSLError.failedToLoadCertificate }
                // Loaded by path: BoringSSL takes a bundle with repeated certificates that way (Debian's has some),
                // where adding them one by one fails on the repeat.
                configuration.trustRoots = .file(caFile)
            } catch {
                throw HaulError(.usage, "cannot read CA certificates from \(caFile): \(Self.fileProblem(caFile, error))")
            }
        }
        if let caDirectory {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: caDirectory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw HaulError(.usage, "the CA folder \(caDirectory) does not exist or is not a folder")
            }
            // A folder can only be the main trust root (extra roots are read as files); the CA file's certificates
            // then join it one by one, each once.
            if !caFileCertificates.isEmpty {
                var seen = Set<NIOSSLCertificate>()
                configuration.additionalTrustRoots = [.certificates(caFileCertificates.filter { seen.insert($0).inserted })]
            }
            configuration.trustRoots = .file(caDirectory)
        }
        if let clientCertificate {
            do {
                let chain = try NIOSSLCertificate.fromPEMFile(clientCertificate)
                guard !chain.isEmpty else { throw NIOSSLError.failedToLoadCertificate }
                configuration.certificateChain = chain.map { .certificate($0) }
            } catch {
                throw HaulError(.usage, "cannot read the client certificate \(clientCertificate): \(Self.fileProblem(clientCertificate, error))")
            }
            let keyPath = clientKey ?? clientCertificate
            do {
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(file: keyPath, format: .pem))
            } catch {
                throw HaulError(.usage, "cannot read the client certificate's private key \(keyPath): \(Self.fileProblem(keyPath, error))"
                    + (clientKey == nil ? " (no separate key file was given)" : ""), reason: .unusableTLSFiles)
            }
        }
        // Made once here so that a problem is reported now, by what it is about, not as a failed connection.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw HaulError(.usage, "cannot use the TLS certificates given: \(CertificateProblem.reason(fromLibraryText: String(describing: error)))")
        }
        return configuration
    }

    private static func fileProblem(_ path: String, _ error: any Error) -> String {
        if !FileManager.default.fileExists(atPath: path) { return "no such file" }
        if !FileManager.default.isReadableFile(atPath: path) { return "permission denied" }
        return "not PEM (\(CertificateProblem.reason(fromLibraryText: String(describing: error))))"
    }
}
