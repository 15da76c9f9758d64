import Foundation
import HaulTestSupport
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// An HTTP/2 server that refuses streams (RST_STREAM with REFUSED_STREAM, as Go's and h2o's servers do past their
/// stream limits): the server did no work on such a request (RFC 9113 §8.7), so haul sends it again at once, as curl
/// does, without spending a retry. No server installed here refuses streams on demand, so this one is a few lines of
/// Python's `h2`.
@Suite(.enabled(if: RefusingHTTP2Server.enabled, "needs python3 with h2 (python3 -m pip install h2) and openssl"))
struct RefusedStreamTests {
    @Test func aRefusedStreamIsSentAgainWithoutSpendingARetry() async throws {
        try await Sandbox.with { box in
            let server = try await RefusingHTTP2Server.start(in: box.path("h2"), refusingEvery: 2)
            defer { server.stop() }
            var bodies: [String: [UInt8]] = [:]
            for index in 0..<30 {
                let body = TestData.bytes(3_000 + index * 7, seed: 3_700 + UInt64(index))
                bodies["f\(index).bin"] = body
                try writeBytes(body, to: server.root + "/f\(index).bin")
            }
            try (bodies.keys.sorted().map { server.url("/" + $0) }.joined(separator: "\n") + "\n")
                .write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
            // No retry at all allowed: a refused stream spending one would fail its download.
            let result = try await box.run(
                ["get", "-i", box.path("list.txt"), "-j", "8", "--retries", "0", "--dir", "D", "--cacert", server.caCertificate, "--json"],
                timeout: .seconds(120))
            #expect(result.exitCode == 0, "\(result.stderr)")
            for (name, body) in bodies {
                #expect(contentMismatch(box.path("D/" + name), expected: body) == nil, "\(name)")
            }
            let refused = server.refusedCount()
            #expect(refused >= 10, "every second stream was refused: \(refused)")
        }
    }
}

/// The server: TLS with `h2` by ALPN, the files of `root`, every `n`th stream refused before any work.
struct RefusingHTTP2Server {
    static let python = RealServerTools.pythonImporting("h2.connection")
    static var enabled: Bool { (python != nil && TestCertificates.openssl != nil) || ExternalTools.inCI }

    let folder: String
    let port: Int
    let caCertificate: String
    let process: ChildProcess
    var root: String { folder + "/www" }

    func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    /// How many streams it refused so far.
    func refusedCount() -> Int {
        let log = (try? String(contentsOfFile: folder + "/stdout.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.hasPrefix("refused ") }.count
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
    }

    static func start(in folder: String, refusingEvery every: Int) async throws -> RefusingHTTP2Server {
        guard let python else { throw HarnessError("h2 is not installed for python3: python3 -m pip install h2") }
        try FileManager.default.createDirectory(atPath: folder + "/www", withIntermediateDirectories: true)
        let certificates = try TestCertificates.make(in: folder + "/certificates")
        try script.write(toFile: folder + "/server.py", atomically: true, encoding: .utf8)
        let process = try launchProcess(
            python, [folder + "/server.py", folder + "/www", certificates.serverCertificate, certificates.serverKey, String(every)],
            logsIn: folder)
        // It binds a free port itself and says which: no port it was given can have been taken meanwhile.
        let deadline = ContinuousClock.now + .seconds(20)
        while process.isRunning, ContinuousClock.now < deadline {
            let log = (try? String(contentsOfFile: folder + "/stdout.log", encoding: .utf8)) ?? ""
            if let line = log.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }), let port = Int(line.dropFirst(6)) {
                return RefusingHTTP2Server(folder: folder, port: port, caCertificate: certificates.caCertificate, process: process)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let stderr = (try? String(contentsOfFile: folder + "/stderr.log", encoding: .utf8)) ?? ""
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        throw HarnessError("the refusing HTTP/2 server did not start: \(stderr)")
    }

    static let script = """
        import asyncio, os, ssl, sys
        import h2.config, h2.connection, h2.errors, h2.events

        root, cert, key, every = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        count = 0

        async def serve(reader, writer):
            global count
            conn = h2.connection.H2Connection(config=h2.config.H2Configuration(client_side=False))
            conn.initiate_connection()
            writer.write(conn.data_to_send())
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                for event in conn.receive_data(data):
                    if not isinstance(event, h2.events.RequestReceived):
                        continue
                    count += 1
                    if count % every == 0:
                        conn.reset_stream(event.stream_id, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
                        print("refused", event.stream_id, flush=True)
                        continue
                    path = dict(event.headers).get(b":path", b"/").decode().split("?")[0]
                    name = os.path.basename(path)
                    file = os.path.join(root, name)
                    if name and os.path.isfile(file):
                        body = open(file, "rb").read()
                        conn.send_headers(event.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                        conn.send_data(event.stream_id, body, end_stream=True)
                    else:
                        conn.send_headers(event.stream_id, [(":status", "404"), ("content-length", "0")], end_stream=True)
                writer.write(conn.data_to_send())
                await writer.drain()
            writer.close()

        async def main():
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(cert, key)
            context.set_alpn_protocols(["h2"])
            server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
            print("ready", server.sockets[0].getsockname()[1], flush=True)
            async with server:
                await server.serve_forever()

        asyncio.run(main())
        """
}
