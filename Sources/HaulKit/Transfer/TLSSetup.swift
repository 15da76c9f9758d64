import Foundation
import NIOSSL

extension TLSTrust {
    /// The TLS configuration these settings describe, reading the CA and client certificate files now so that a
    /// missing or unreadable one is reported by name (a usage error), not as a failed connection.
    ///
    /// Every file is read through ``NamedFileReader`` (non-blocking, regular, bounded) and handed to BoringSSL as
    /// bytes, never as a path it would open again by itself: a FIFO or a device named as a CA file is refused at
    /// once, and the hashed certificates of a CA folder are read here rather than looked up one by one during a
    /// handshake, on an event loop. Reads files: call it on a blocking-I/O thread (``TransferEngine`` does).
    func makeConfiguration() throws(HaulError) -> TLSConfiguration {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.shutdownTimeout = TransferEngine.tlsShutdownTimeout
        if insecure { configuration.certificateVerification = .none }
        // The CA file's and the CA folder's certificates, each once: BoringSSL refuses a repeated one added by
        // itself (Debian's bundle repeats some, and its folder holds the bundle's certificates again).
        // Every file is read (and checked) before any is parsed: a FIFO or a device among them is named first.
        let caBytes = try caFile.map { path throws(HaulError) in try NamedFileReader.readNow(path, as: .caBundle).bytes }
        let folderFiles = try caDirectory.map { path throws(HaulError) in try NamedFileReader.readHashedFolder(path) } ?? []
        let certificateBytes = try clientCertificate.map { path throws(HaulError) in try NamedFileReader.readNow(path, as: .clientCertificate).bytes }
        let keyBytes = try clientKey.map { path throws(HaulError) in try NamedFileReader.readNow(path, as: .clientKey).bytes } ?? certificateBytes
        var roots: [NIOSSLCertificate] = []
        var seen = Set<NIOSSLCertificate>()
        if let caFile, let caBytes {
            let certificates = try Self.certificates(caBytes, in: caFile, noun: "CA certificates")
            guard !certificates.isEmpty else {
                throw HaulError(.usage, "cannot read CA certificates from \(caFile): no certificate in it", reason: .unusableTLSFiles)
            }
            roots += certificates.filter { seen.insert($0).inserted }
        }
        for (_, bytes) in folderFiles {
            // A file of the folder that is not a certificate (a CRL) is left out, as OpenSSL's lookup would.
            let certificates = (try? NIOSSLCertificate.fromPEMBytes(bytes)) ?? []
            roots += certificates.filter { seen.insert($0).inserted }
        }
        if caFile != nil || caDirectory != nil { configuration.trustRoots = .certificates(roots) }
        if let clientCertificate, let certificateBytes, let keyBytes {
            let chain = try Self.certificates(certificateBytes, in: clientCertificate, noun: "the client certificate")
            guard !chain.isEmpty else {
                throw HaulError(.usage, "cannot read the client certificate \(clientCertificate): no certificate in it", reason: .unusableTLSFiles)
            }
            configuration.certificateChain = chain.map { .certificate($0) }
            let keyPath = clientKey ?? clientCertificate
            do {
                configuration.privateKey = .privateKey(try NIOSSLPrivateKey(bytes: keyBytes, format: .pem))
            } catch {
                throw HaulError(.usage, "cannot read the client certificate's private key \(keyPath): not PEM (\(CertificateProblem.reason(fromLibraryText: String(describing: error))))"
                    + (clientKey == nil ? " (no separate key file was given)" : ""), reason: .unusableTLSFiles)
            }
        }
        // Made once here so that a problem is reported now, by what it is about, not as a failed connection.
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw HaulError(.usage, "cannot use the TLS certificates given: \(CertificateProblem.reason(fromLibraryText: String(describing: error)))",
                            reason: .unusableTLSFiles)
        }
        return configuration
    }

    private static func certificates(_ bytes: [UInt8], in path: String, noun: String) throws(HaulError) -> [NIOSSLCertificate] {
        do {
            return try NIOSSLCertificate.fromPEMBytes(bytes)
        } catch {
            let what = noun == "CA certificates" ? "CA certificates from \(path)" : "\(noun) \(path)"
            throw HaulError(.usage, "cannot read \(what): not PEM (\(CertificateProblem.reason(fromLibraryText: String(describing: error))))",
                            reason: .unusableTLSFiles)
        }
    }
}
