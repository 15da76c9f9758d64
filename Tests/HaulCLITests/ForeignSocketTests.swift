#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// Another local user, mallory, plants what `haul` would talk to or keep its state in: a listening socket where the
/// daemon's should be (a folder open to all, `--socket`, `HAUL_SOCKET`), or a `HAUL_HOME` of her own. Nothing of a
/// task (its URL's password, a signature, a header, a cookie) ever reaches her, and the command says why in one line.
@Suite(.serialized) struct ForeignSocketTests {
    /// Listens at argv[1], then appends every byte any client sends to stdout; ends after argv[2] seconds.
    static let listener = #"""
        path, seconds = sys.argv[1], float(sys.argv[2])
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        server.bind(path)
        os.chmod(path, 0o777)
        server.listen(16)
        server.settimeout(0.2)
        open(path + ".ready", "w").close()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            try:
                client, _ = server.accept()
            except socket.timeout:
                continue
            client.settimeout(1)
            try:
                while True:
                    data = client.recv(65536)
                    if not data:
                        break
                    sys.stdout.buffer.write(data)
                    sys.stdout.flush()
            except OSError:
                pass
            client.close()
        """#

    static let secrets = ["SEKRETPASS", "SEKRETSIG", "SEKRETBEARER", "SEKRETCOOKIE"]

    @Test(.enabled(if: LocalUser.available && ExternalTools.pythonTestsEnabled, "needs root (to add a user) and python3"))
    func aSocketAnotherUserListensOnIsNeverSentATask() async throws {
        try await LocalUser.with { mallory in
            try await Sandbox.with { box in
                let shared = box.root + "/shared"
                try FileManager.default.createDirectory(atPath: shared, withIntermediateDirectories: true)
                #expect(chmod(box.root, 0o755) == 0 && chmod(shared, 0o1777) == 0)
                let socket = shared + "/haul.sock", heard = box.root + "/heard"
                let listener = try mallory.python(Self.listener, [socket, "60"], modules: ["socket", "time"], output: heard)
                defer { if listener.isRunning { kill(listener.processIdentifier, SIGKILL) } }
                try await eventually("mallory listens", timeout: .seconds(30), step: .milliseconds(50)) {
                    guard listener.isRunning else { throw HarnessError("the listener ended: \((try? String(contentsOfFile: heard + ".stderr", encoding: .utf8)) ?? "")") }
                    return FileManager.default.fileExists(atPath: socket + ".ready")
                }
                let url = "http://user:SEKRETPASS@127.0.0.1:9/f.bin?X-Amz-Signature=SEKRETSIG"
                let task = [url, "-H", "Authorization: Bearer SEKRETBEARER", "-b", "sid=SEKRETCOOKIE", "-o", box.path("f.bin")]
                let ways: [(String, [String], [String: String])] = [
                    ("--socket", ["add", "--socket", socket] + task, [:]),
                    ("HAUL_SOCKET", ["add", "--no-autostart"] + task, ["HAUL_SOCKET": socket]),
                    ("ls --socket", ["ls", "--socket", socket], [:]),
                ]
                for (way, arguments, environment) in ways {
                    let result = try await box.start(arguments, environment: environment).wait(timeout: .seconds(40))
                    #expect(result.exitCode == 2, "\(way): \(result.stderr)")
                    #expect(result.stderrLines.count == 1 && result.stderr.contains("another user's socket"), "\(way): \(result.stderr)")
                    for secret in Self.secrets { #expect(!result.stderr.contains(secret), "\(way): \(result.stderr)") }
                }
                let received = (try? String(contentsOfFile: heard, encoding: .utf8)) ?? ""
                #expect(received.isEmpty, "mallory's socket was sent: \(received)")
            }
        }
    }

    @Test(.enabled(if: LocalUser.available, "needs root (to add a user)"))
    func aHaulHomeOfAnotherUserIsRefused() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(10_000, seed: 3)))
            try await LocalUser.with { mallory in
                try await Sandbox.with { box in
                    let home = box.root + "/mallory-home"
                    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
                    mallory.own(home)
                    let result = try await box.start([
                        "get", server.url("/f.bin"), "-o", box.path("f.bin"),
                    ], environment: ["HAUL_HOME": home]).wait(timeout: .seconds(40))
                    #expect(result.exitCode != 0, "\(result.stderr)")
                    #expect(result.stderr.contains("belongs to another user"), "\(result.stderr)")
                    // One piece of advice, once.
                    #expect(result.stderr.components(separatedBy: "HAUL_HOME").count == 2, "\(result.stderr)")
                    #expect(server.requests("/f.bin").isEmpty)
                    #expect(!FileManager.default.fileExists(atPath: box.path("f.bin")))
                    #expect(((try? FileManager.default.contentsOfDirectory(atPath: home)) ?? ["?"]).isEmpty, "nothing written in mallory's folder")
                }
            }
        }
    }
}
#endif
