import Foundation
import HaulTestSupport

#if canImport(Glibc)
import Glibc
#endif

/// The server: TLS with `h2` by ALPN, the files of `root`, served with a misbehaviour. It logs one line per event on
/// its standard output (`refused ID`, `http1-required ID`, `http1 PATH`, `reset ID`).
struct MisbehavingHTTP2Server {
    enum Misbehaviour {
        /// Every `n`th stream refused before any work (`REFUSED_STREAM`).
        case refuseEvery(Int)
        /// Every HTTP/2 stream reset with `HTTP_1_1_REQUIRED`; `http/1.1` by ALPN served.
        case requireHTTP1
        /// Every stream reset with `INTERNAL_ERROR` after half its body.
        case resetMidBody

        var arguments: [String] {
            switch self {
            case .refuseEvery(let n): ["refuse", String(n)]
            case .requireHTTP1: ["http1", "0"]
            case .resetMidBody: ["reset", "0"]
            }
        }
    }

    static let python = RealServerTools.pythonImporting("h2.connection")
    static var enabled: Bool { (python != nil && TestCertificates.openssl != nil) || ExternalTools.inCI }

    let folder: String
    let port: Int
    let caCertificate: String
    let process: ChildProcess
    var root: String { folder + "/www" }

    func url(_ path: String) -> String { "https://127.0.0.1:\(port)\(path)" }

    /// How many lines of its log begin with `prefix` so far.
    func logged(_ prefix: String) -> Int {
        let log = (try? String(contentsOfFile: folder + "/stdout.log", encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { $0.hasPrefix(prefix) }.count
    }

    func stop() {
        guard process.isRunning else { return }
        kill(process.processIdentifier, SIGKILL)
        let deadline = ContinuousClock.now + .seconds(3)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
    }

    static func start(in folder: String, _ misbehaviour: Misbehaviour) async throws -> MisbehavingHTTP2Server {
        guard let python else { throw HarnessError("h2 is not installed for python3: python3 -m pip install h2") }
        try FileManager.default.createDirectory(atPath: folder + "/www", withIntermediateDirectories: true)
        let certificates = try TestCertificates.make(in: folder + "/certificates")
        try script.write(toFile: folder + "/server.py", atomically: true, encoding: .utf8)
        let process = try launchProcess(
            python, [folder + "/server.py", folder + "/www", certificates.serverCertificate, certificates.serverKey] + misbehaviour.arguments,
            logsIn: folder)
        // It binds a free port itself and says which: no port it was given can have been taken meanwhile.
        let deadline = ContinuousClock.now + .seconds(20)
        while process.isRunning, ContinuousClock.now < deadline {
            let log = (try? String(contentsOfFile: folder + "/stdout.log", encoding: .utf8)) ?? ""
            if let line = log.split(separator: "\n").first(where: { $0.hasPrefix("ready ") }), let port = Int(line.dropFirst(6)) {
                return MisbehavingHTTP2Server(folder: folder, port: port, caCertificate: certificates.caCertificate, process: process)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        let stderr = (try? String(contentsOfFile: folder + "/stderr.log", encoding: .utf8)) ?? ""
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        throw HarnessError("the misbehaving HTTP/2 server did not start: \(stderr)")
    }

    static let script = """
        import asyncio, os, ssl, sys
        import h2.config, h2.connection, h2.errors, h2.events

        root, cert, key, mode, every = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
        count = 0

        def file_of(path):
            name = os.path.basename(path.split("?")[0])
            file = os.path.join(root, name)
            return open(file, "rb").read() if name and os.path.isfile(file) else None

        async def serve_http1(reader, writer):
            while True:
                try:
                    head = await reader.readuntil(b"\\r\\n\\r\\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    break
                path = head.split(b" ")[1].decode()
                print("http1", path, flush=True)
                body = file_of(path)
                status = b"200 OK" if body is not None else b"404 Not Found"
                body = body or b""
                writer.write(b"HTTP/1.1 " + status + b"\\r\\ncontent-length: " + str(len(body)).encode() + b"\\r\\n\\r\\n" + body)
                await writer.drain()
            writer.close()

        async def serve(reader, writer):
            global count
            if writer.get_extra_info("ssl_object").selected_alpn_protocol() != "h2":
                return await serve_http1(reader, writer)
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
                    if mode == "refuse" and count % every == 0:
                        conn.reset_stream(event.stream_id, error_code=h2.errors.ErrorCodes.REFUSED_STREAM)
                        print("refused", event.stream_id, flush=True)
                        continue
                    if mode == "http1":
                        conn.reset_stream(event.stream_id, error_code=h2.errors.ErrorCodes.HTTP_1_1_REQUIRED)
                        print("http1-required", event.stream_id, flush=True)
                        continue
                    body = file_of(dict(event.headers).get(b":path", b"/").decode())
                    if body is None:
                        conn.send_headers(event.stream_id, [(":status", "404"), ("content-length", "0")], end_stream=True)
                    elif mode == "reset":
                        conn.send_headers(event.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                        conn.send_data(event.stream_id, body[: len(body) // 2])
                        conn.reset_stream(event.stream_id, error_code=h2.errors.ErrorCodes.INTERNAL_ERROR)
                        print("reset", event.stream_id, flush=True)
                    else:
                        conn.send_headers(event.stream_id, [(":status", "200"), ("content-length", str(len(body)))])
                        conn.send_data(event.stream_id, body, end_stream=True)
                writer.write(conn.data_to_send())
                await writer.drain()
            writer.close()

        async def main():
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            context.load_cert_chain(cert, key)
            context.set_alpn_protocols(["h2", "http/1.1"] if mode == "http1" else ["h2"])
            server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=context)
            print("ready", server.sockets[0].getsockname()[1], flush=True)
            async with server:
                await server.serve_forever()

        asyncio.run(main())
        """
}
