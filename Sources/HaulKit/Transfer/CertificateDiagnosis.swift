import Foundation
import NIOCore
import NIOPosix
import NIOSSL

/// Finds out why a server's certificate was refused: connects once more, takes the certificate the server shows
/// (refusing it, so nothing is sent), and leaves the verdict to ``CertificateProblem/diagnose(_:host:now:)``.
/// Only used after a verification failure, when the library's error does not say which check failed.
enum CertificateDiagnosis {
    /// The server's leaf certificate, or `nil` when it cannot be had within a few seconds.
    static func peerCertificate(host: String, port: Int) async -> PeerCertificate? {
        guard let context = try? NIOSSLContext(configuration: .makeClientConfiguration()) else { return nil }
        let eventLoop = MultiThreadedEventLoopGroup.singleton.next()
        // Fulfilled by whichever comes first: the certificate, the channel closing, the timeout (NIO ignores the rest).
        let result = eventLoop.makePromise(of: PeerCertificate?.self)
        let isAddress = (try? SocketAddress(ipAddress: host, port: port)) != nil
        let bootstrap = ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let handler = try NIOSSLClientHandler(
                        context: context, serverHostname: isAddress ? nil : host,
                        customVerificationCallback: { certificates, verdict in
                            result.succeed(certificates.first.map(PeerCertificate.init(_:)))
                            verdict.succeed(.failed)
                        })
                    try channel.pipeline.syncOperations.addHandler(handler)
                }
            }
        let timeout = eventLoop.scheduleTask(in: .seconds(5)) { result.succeed(nil) }
        defer { timeout.cancel() }
        guard let channel = try? await bootstrap.connect(host: host, port: port).get() else { return nil }
        channel.closeFuture.whenComplete { _ in result.succeed(nil) }
        let certificate = try? await result.futureResult.get()
        channel.close(promise: nil)
        return certificate ?? nil
    }
}

extension PeerCertificate {
    init(_ certificate: NIOSSLCertificate) {
        var dnsNames: [String] = []
        var ipAddresses: [String] = []
        for name in certificate._subjectAlternativeNames() {
            let bytes = Array(name.contents)
            if name.nameType == .dnsName {
                dnsNames.append(String(decoding: bytes, as: UTF8.self))
            } else if name.nameType == .ipAddress {
                if bytes.count == 4 {
                    ipAddresses.append(bytes.map(String.init).joined(separator: "."))
                } else if bytes.count == 16, let address = try? SocketAddress(packedIPAddress: ByteBuffer(bytes: bytes), port: 0),
                          let text = address.ipAddress {
                    ipAddresses.append(text)
                }
            }
        }
        // The common name is not public API; the certificate's description carries it.
        let description = certificate.description
        var commonName: String?
        if let marker = description.range(of: ";common_name=") {
            commonName = String(description[marker.upperBound...].prefix { $0 != ";" && $0 != ">" })
        }
        self.init(notValidBefore: Int64(certificate.notValidBefore), notValidAfter: Int64(certificate.notValidAfter),
                  dnsNames: dnsNames, ipAddresses: ipAddresses, commonName: commonName)
    }
}
