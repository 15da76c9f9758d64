import AsyncHTTPClient
import Foundation
import HaulTestSupport
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
@testable import HaulKit

#if canImport(Glibc)
import Glibc
#endif

/// Transport errors are read by their type and code, never their text: real failures from NIO and
/// AsyncHTTPClient (a refused port, a name that does not resolve), and errors whose text lies.
@Suite struct TransportErrorTests {
    let url = URL(string: "http://127.0.0.1:8080/f")!

    @Test func aRefusedPortIsRefusedThroughNIOAndAsyncHTTPClient() async throws {
        let closed = try RefusingPort()
        do {
            _ = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: closed.port).get()
            Issue.record("a closed port accepted a connection")
        } catch {
            #expect(TransportError(error) == .connectionRefused, "\(error)")
        }
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        let target = URL(string: "http://127.0.0.1:\(closed.port)/f")!
        do {
            _ = try await client.execute(HTTPClientRequest(url: target.absoluteString), timeout: .seconds(10))
            Issue.record("a closed port answered")
        } catch {
            let failure = try DownloadJob.classify(error, url: target) as? TransientFailure
            #expect(failure?.reason == "connection refused (127.0.0.1:\(closed.port))", "\(error)")
            #expect(failure?.beforeConnecting == true)
        }
        try await client.shutdown()
    }

    @Test func aNameThatDoesNotResolveIsAnUnknownHost() async throws {
        do {
            _ = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "no-such-host.invalid", port: 80).get()
            Issue.record("no-such-host.invalid resolved")
        } catch {
            #expect(TransportError(error) == .unknownHost, "\(error)")
            let failure = try DownloadJob.classify(error, url: URL(string: "http://no-such-host.invalid/x")!) as? TransientFailure
            #expect(failure?.reason == "the host name could not be resolved (no-such-host.invalid:80)")
            #expect(failure?.beforeConnecting == true)
        }
    }

    @Test func errnoCodesAreReadByNumber() {
        #expect(TransportError(IOError(errnoCode: ECONNREFUSED, reason: "connect")) == .connectionRefused)
        #expect(TransportError(IOError(errnoCode: ECONNRESET, reason: "read")) == .connectionReset)
        #expect(TransportError(IOError(errnoCode: EAFNOSUPPORT, reason: "connect")) == .noAddressOfFamily)
        #expect(TransportError(IOError(errnoCode: ETIMEDOUT, reason: "connect")) == .other)
        for code in [EMFILE, ENFILE] {
            #expect(TransportError(IOError(errnoCode: code, reason: "socket")) == .tooManyOpenFiles)
        }
    }

    @Test func runningOutOfDescriptorsIsSaidInWordsWithWhatToDo() throws {
        let failure = try DownloadJob.classify(IOError(errnoCode: EMFILE, reason: "socket(domain:type:protocolSubtype:)"), url: url) as? TransientFailure
        #expect(failure?.reason.hasPrefix("too many files and connections open to connect to 127.0.0.1:8080 (this process may have ") == true, "\(failure?.reason ?? "")")
        #expect(failure?.reason.contains("ulimit -n") == true)
        #expect(failure?.reason.contains("socket(") == false, "no library call in the words")
        let file = POSIX.error("creating", "/d/f.haul-part", errno: EMFILE)
        #expect(file.message.hasPrefix("too many files and connections open while creating /d/f.haul-part (this process may have "), "\(file.message)")
        #expect(file.message.hasSuffix("raise the limit (ulimit -n) or run fewer downloads at once (-j)"))
    }

    @Test func anEarlyEndIsADropWhateverTheLibrary() throws {
        let drops: [any Error] = [
            ChannelError.ioOnClosedChannel, HTTPParserError.invalidEOFState, NIOSSLError.uncleanShutdown,
            NIOSSLError.readInInvalidTLSState, HTTPClientError.uncleanShutdown,
        ]
        for error in drops {
            let failure = try DownloadJob.classify(error, url: url) as? TransientFailure
            #expect(failure?.reason == "the connection closed before the transfer completed (127.0.0.1:8080)", "\(error)")
            #expect(failure?.beforeConnecting == false)
        }
    }

    @Test func anythingButAnEarlyEndFromTheParserIsNotHTTP() throws {
        for error in [HTTPParserError.invalidVersion, .invalidStatus, .headerOverflow] {
            let failure = try DownloadJob.classify(error, url: url) as? TransientFailure
            #expect(failure?.kind == .server && failure?.reason == "127.0.0.1:8080 sent a response that is not valid HTTP", "\(error)")
        }
    }

    @Test func tlsLibraryErrorsAreFinal() throws {
        let errors: [any Error] = [
            NIOSSLError.handshakeFailed(.sslError([])), NIOSSLError.failedToLoadCertificate, BoringSSLError.syscallError,
            NIOTLSUnwrappingError.alreadyClosed,
        ]
        for error in errors {
            #expect(TransportError(error) == .tls, "\(error)")
            let failure = try DownloadJob.classify(error, url: url) as? HaulError
            #expect(failure?.message.hasPrefix("TLS failure with 127.0.0.1:8080") == true, "\(error)")
        }
    }

    /// An error whose text reads like a known cause is not one: only its type says what it is.
    struct Lying: Error, CustomStringConvertible {
        var description: String
    }

    @Test func textThatLooksLikeACauseIsNotOne() throws {
        for text in ["connectionRefused", "Connection refused", "NXDOMAIN", "UnknownHost dnsA", "NIOSSLError.handshakeFailed",
                     "Address family not supported", "uncleanShutdown", "ioOnClosedChannel"] {
            #expect(TransportError(Lying(description: text)) == .other, "\(text)")
            let failure = try DownloadJob.classify(Lying(description: text), url: url) as? TransientFailure
            #expect(failure?.beforeConnecting == false, "\(text)")
            #expect(failure?.reason == "\(DownloadJob.words(text)) (127.0.0.1:8080)", "\(text)")
        }
    }

    @Test func theCauseOfSeveralFailedConnectionsIsTheMostTellingOne() {
        #expect(TransportError.mostTelling([.other, .connectionRefused, .noAddressOfFamily]) == .noAddressOfFamily)
        #expect(TransportError.mostTelling([.connectionReset, .connectionRefused]) == .connectionRefused)
        #expect(TransportError.mostTelling([.other]) == nil)
        #expect(TransportError.mostTelling([]) == nil)
    }
}
