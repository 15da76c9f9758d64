#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// Issue 23, "bounded by design": files named by options, URL lists, NUL paths and impossible lengths, each met
/// by a real `haul` (and a real daemon), with the hostile input made for real (a FIFO, /dev/zero, a 50 MB file).
@Suite struct BoundedInputsTests {
    /// A FIFO at `path` (nobody writes to it).
    static func fifo(_ path: String) throws {
        guard mkfifo(path, 0o600) == 0 else { throw HarnessError("mkfifo \(path): errno \(errno)") }
    }

    /// A failure a person reads: the exit status, one line on stderr, saying `fragment`.
    static func expectOneLine(_ result: HaulResult, exit: Int32, saying fragment: String, _ what: String) {
        #expect(result.exitCode == exit && !result.signalled, "\(what): exit \(result.exitCode): \(result.stderr)")
        #expect(result.stderrLines.count == 1, "\(what): one line, got: \(result.stderr)")
        #expect(result.stderr.contains(fragment), "\(what): \(result.stderr)")
    }

    // MARK: Files named by options

    @Test func aFIFOOrADeviceNamedAsATLSFileIsOneLineAndExit2AtOnce() async throws {
        try await Sandbox.with { box in
            let fifo = box.path("ca.fifo")
            try Self.fifo(fifo)
            // A FIFO someone holds open for writing, and a link to the FIFO: opened, they would block a reader too.
            let held = box.path("held.fifo")
            try Self.fifo(held)
            let writer = open(held, O_RDWR | O_NONBLOCK)
            defer { close(writer) }
            #expect(symlink(fifo, box.path("link.pem")) == 0)
            let capath = box.path("capath")
            try FileManager.default.createDirectory(atPath: capath, withIntermediateDirectories: true)
            try Self.fifo(capath + "/9d6523ce.0")
            try "not a certificate\n".write(toFile: box.path("cert.pem"), atomically: true, encoding: .utf8)
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let url = "https://127.0.0.1:\(refusing.port)/f.bin"
            let cases: [(String, [String], String)] = [
                ("--cacert FIFO", ["--cacert", fifo], "FIFO"),
                ("--cacert held FIFO", ["--cacert", held], "FIFO"),
                ("--cacert link to a FIFO", ["--cacert", box.path("link.pem")], "FIFO"),
                ("--cacert /dev/zero", ["--cacert", "/dev/zero"], "device"),
                ("--capath with a FIFO", ["--capath", capath], "FIFO"),
                ("--cert FIFO", ["--cert", fifo], "FIFO"),
                ("--key FIFO", ["--cert", box.path("cert.pem"), "--key", fifo], "FIFO"),
                ("SSL_CERT_FILE FIFO", [], "FIFO"),
            ]
            for (what, flags, fragment) in cases {
                let arguments = ["get", url, "-o", "f.bin", "--retries", "0"] + flags
                let run = what.hasPrefix("SSL_CERT_FILE")
                    ? try box.start(["SSL_CERT_FILE=" + fifo, try HaulBinary.path()] + arguments, binary: "/usr/bin/env")
                    : try box.start(arguments)
                // Generous: the point is that it ends at all (it used to wait for a writer for ever).
                let result = try await run.wait(timeout: .seconds(30))
                Self.expectOneLine(result, exit: 2, saying: fragment, what)
                #expect(!fileExists(box.path("f.bin")) && !fileExists(box.path("f.bin.haul-part")), "\(what)")
            }
        }
    }

    @Test func sigintAndSigtermStopHaulWhileItWaitsOnAListOnStandardInput() async throws {
        try await Sandbox.with { box in
            for signal in [SIGINT, SIGTERM] {
                // A pipe the test holds open and never writes to: haul waits for its list.
                let pipe = Pipe()
                let run = try box.start(["get", "-i", "-", "--dir", "d"], standardInput: pipe.fileHandleForReading)
                try pipe.fileHandleForReading.close()
                try await Task.sleep(for: .milliseconds(300))
                #expect(run.isRunning, "haul waits for its list")
                run.signal(signal)
                let result = try await run.wait(timeout: .seconds(20))
                #expect(result.signalled || result.exitCode == 130, "signal \(signal): \(result.exitCode) \(result.stderr)")
                try pipe.fileHandleForWriting.close()
            }
        }
    }

    @Test(.enabled(if: ExternalTools.pythonTestsEnabled, "needs python3 (to measure haul's memory)"))
    func aListOfZerosOrOfGarbageIsExit2AtOnceInBoundedMemory() async throws {
        try await Sandbox.with { box in
            var peaks: [(String, Int)] = []
            let (device, devicePeak) = try await box.runMeasuringMemory(["get", "-i", "/dev/zero", "--dir", "d"], timeout: .seconds(30))
            Self.expectOneLine(device, exit: 2, saying: "/dev/zero is a device, not a regular file", "-i /dev/zero")
            let zero = try #require(FileHandle(forReadingAtPath: "/dev/zero"))
            let (stdin, stdinPeak) = try await box.runMeasuringMemory(["get", "-i", "-", "--dir", "d"], standardInput: zero, timeout: .seconds(30))
            Self.expectOneLine(stdin, exit: 2, saying: "line 1: longer than 64 KiB", "-i - < /dev/zero")
            peaks += [("-i /dev/zero", devicePeak), ("-i - < /dev/zero", stdinPeak)]
            // A million lines of garbage: refused at its first line, without reading the rest.
            var garbage = ""
            garbage.reserveCapacity(30_000_000)
            for index in 0..<1_000_000 { garbage += "garbage \(index) not a url\n" }
            try garbage.write(toFile: box.path("garbage.txt"), atomically: false, encoding: .utf8)
            let (listed, listedPeak) = try await box.runMeasuringMemory(["get", "-i", "garbage.txt", "--dir", "d"], timeout: .seconds(30))
            Self.expectOneLine(listed, exit: 2, saying: "garbage.txt, line 1:", "1M lines of garbage")
            // The same list of URLs, one line made too long near its end: also refused, having read it as it came.
            var urls = String(repeating: "http://127.0.0.1:1/f\n", count: 200_000)
            urls += String(repeating: "a", count: 70_000) + "\n"
            try urls.write(toFile: box.path("long.txt"), atomically: false, encoding: .utf8)
            // A debug build checks 200,000 lines in about 20 s alone; a full parallel run on two cores took over 60.
            let (long, longPeak) = try await box.runMeasuringMemory(["get", "-i", "long.txt", "--dir", "d"], timeout: .seconds(240))
            Self.expectOneLine(long, exit: 2, saying: "long.txt, line 200001: longer than 64 KiB", "a long line")
            peaks += [("1M lines of garbage", listedPeak), ("a long line after 200,000 URLs", longPeak)]
            // What the list costs over haul's own size (its first request in a batch: some 30 MB in a debug build).
            for (what, peak) in peaks { #expect(peak < 120 << 20, "\(what): haul held \(peak >> 20) MiB") }
            #expect(!fileExists(box.path("d")), "nothing was downloaded")
        }
    }

    @Test(.enabled(if: ExternalTools.pythonTestsEnabled, "needs python3 (to measure haul's memory)"))
    func aFiftyMegabyteNetrcIsRefusedBySizeAndAFIFONetrcAtOnce() async throws {
        try await Sandbox.with { box in
            let netrc = box.path("netrc")
            let line = Array("machine 127.0.0.1 login user password secret\n".utf8)
            let handle = try #require({ () -> FileHandle? in
                FileManager.default.createFile(atPath: netrc, contents: nil)
                return FileHandle(forWritingAtPath: netrc)
            }())
            let block = Data([UInt8]((0..<(1 << 20 / line.count)).flatMap { _ in line }))
            for _ in 0..<50 { try handle.write(contentsOf: block) }
            try handle.close()
            chmod(netrc, 0o600)
            let (large, peak) = try await box.runMeasuringMemory(["get", "http://127.0.0.1:1/f", "-o", "f", "--netrc-file", netrc], timeout: .seconds(30))
            Self.expectOneLine(large, exit: 2, saying: "is larger than 1 MiB", "a 50 MB netrc")
            #expect(peak < 120 << 20, "haul held \(peak >> 20) MiB for a netrc of 50 MB")
            let fifo = box.path("netrc.fifo")
            try Self.fifo(fifo)
            let blocked = try await box.run(["get", "http://127.0.0.1:1/f", "-o", "f", "--netrc-file", fifo], timeout: .seconds(30))
            Self.expectOneLine(blocked, exit: 2, saying: "is a FIFO, not a regular file", "a FIFO netrc")
        }
    }

    @Test func twoDaemonTasksWithAFIFOAsCacertFailAndTheDaemonStaysResponsive() async throws {
        try await Sandbox.with { box in
            let daemon = try await DaemonHarness.start(box)
            let fifo = box.path("ca.fifo")
            try Self.fifo(fifo)
            let refusing = try RefusingPort()
            defer { refusing.close() }
            let port = refusing.port
            for name in ["a.bin", "b.bin"] {
                let added = try await box.run(["add", "https://127.0.0.1:\(port)/\(name)", "-o", name, "--cacert", fifo, "--no-autostart"])
                #expect(added.exitCode == 0, "\(added.stderr)")
            }
            var tasks: [[String: Any]] = []
            try await eventuallyAsync("both tasks failed", timeout: .seconds(60), step: .milliseconds(200)) {
                let client = try RawSocketClient(path: DaemonHarness.socket(box))
                tasks = try client.call("tasks.list", ["session": "default"], id: 1).result?["tasks"] as? [[String: Any]] ?? []
                return tasks.count == 2 && tasks.allSatisfy { $0["state"] as? String == "failed" }
            }
            for task in tasks {
                let message = (task["error"] as? [String: Any])?["message"] as? String ?? ""
                #expect(message.contains("is a FIFO, not a regular file") && !message.contains("\n"), "\(message)")
            }
            let listed = try await box.run(["ls", "--no-autostart"], timeout: .seconds(30))
            #expect(listed.exitCode == 0 && listed.stdout.contains("failed"), "\(listed.stdout) \(listed.stderr)")
            try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, box)
        }
    }

    // MARK: NUL paths

    @Test func aPathWithANULByteIsInvalidParamsAndNothingIsWritten() async throws {
        try await Sandbox.with { box in
            let daemon = try await DaemonHarness.start(box)
            let client = try RawSocketClient(path: DaemonHarness.socket(box))
            let cut = box.path("a")
            let adds: [(String, [String: Any])] = [
                ("path", ["url": "http://127.0.0.1:1/f", "path": cut + "\u{0}b"]),
                ("directory", ["url": "http://127.0.0.1:1/f", "directory": box.work + "\u{0}/x"]),
                ("tls", ["url": "https://127.0.0.1:1/f", "path": box.path("t"), "options": ["tls": ["caFile": "/etc/ssl\u{0}/ca.pem"]]]),
            ]
            for (index, (what, task)) in adds.enumerated() {
                let reply = try client.call("tasks.add", ["session": "default", "tasks": [task]], id: index)
                #expect(reply.errorCode == -32602 && reply.errorMessage.contains("NUL"), "\(what): \(reply)")
            }
            let open = try client.call("session.open", ["session": "s", "configuration": ["defaultDirectory": box.work + "\u{0}x"]], id: "open")
            #expect(open.errorCode == -32602 && open.errorMessage.contains("NUL"), "\(open)")
            #expect(DaemonHarness.sessionFolders(box).isEmpty, "no session was created")
            #expect(!fileExists(cut) && !fileExists(cut + ".haul-part"), "the part before the NUL was never written")
            try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, box)
        }
    }

    // MARK: Impossible lengths

    @Test func aLengthNoFileCanHaveIsExit7AndLeavesNothing() async throws {
        let claims: [(String, String)] = [
            ("206 …/2^63-1", "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-99/9223372036854775807\r\nContent-Length: 100\r\nETag: \"x\"\r\n\r\n"
                + String(repeating: "x", count: 100)),
            ("200 of 2^63-1", "HTTP/1.1 200 OK\r\nContent-Length: 9223372036854775807\r\n\r\n" + String(repeating: "y", count: 100)),
        ]
        for (what, answer) in claims {
            let responder = try RawResponder(answer: Array(answer.utf8))
            defer { responder.stop() }
            try await Sandbox.with { box in
                for segments in ["1", "4"] {
                    let result = try await box.run(["get", responder.url("/f.bin"), "-o", "f.bin", "--segments", segments, "--retry-wait", "0"])
                    Self.expectOneLine(result, exit: 7, saying: "the server claims 9223372036854775807 bytes", "\(what), \(segments) segments")
                    #expect(!result.stderr.contains("space"), "\(result.stderr)")
                    #expect(box.workContents().isEmpty, "\(what): left \(box.workContents())")
                    #expect(box.records().isEmpty, "\(what): a record was left")
                }
            }
        }
    }

    @Test func aLengthBeyondWhatTheFileSystemHoldsIsExit7AndNoEmptyPartialIsLeft() async throws {
        // EFBIG from fallocate, as a file system past its largest file gives it; here the file size limit of the
        // process gives it (SIGXFSZ ignored, as `trap` leaves it to the exec'd haul).
        let total = 1 << 30
        let answer = "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 0-\(total - 1)/\(total)\r\nContent-Length: \(total)\r\nETag: \"big\"\r\n\r\n"
            + String(repeating: "z", count: 10_000)
        let responder = try RawResponder(answer: Array(answer.utf8))
        defer { responder.stop() }
        try await Sandbox.with { box in
            let haul = try HaulBinary.path()
            let script = "trap '' XFSZ; ulimit -f 4096; exec \"$0\" get \"$1\" -o big.bin --segments 4 --retry-wait 0"
            let result = try await box.start(["-c", script, haul, responder.url("/big.bin")], binary: "/bin/sh").wait(timeout: .seconds(60))
            Self.expectOneLine(result, exit: 7, saying: "the server claims \(total) bytes, more than a file on this file system can hold", "EFBIG")
            #expect(!result.stderr.contains("free some space"), "\(result.stderr)")
            #expect(box.workContents().isEmpty, "left \(box.workContents())")
            #expect(box.records().isEmpty, "a record was left")
        }
    }

    // MARK: TLS handshake timeout

    @Test func aServerThatNeverAnswersTheHandshakeIsOneLineInWords() async throws {
        // A listener that never accepts: the kernel completes the TCP handshake, nobody answers the TLS one.
        let silent = try RefusingPort()
        defer { silent.close() }
        try silent.listenSilently()
        let port = silent.port
        try await Sandbox.with { box in
            // Whether the connection's timer or the handshake's fires first is AsyncHTTPClient's race: either is words.
            let result = try await box.run(["get", "https://127.0.0.1:\(port)/f", "-o", "f", "--connect-timeout", "1", "--retries", "2", "--retry-wait", "0"],
                                           timeout: .seconds(60))
            #expect(result.exitCode == 3, "\(result.stderr)")
            let errors = result.stderrLines.filter { $0.hasPrefix("haul: error:") }
            #expect(errors.count == 1 && errors[0].contains("timed out"), "\(result.stderr)")
            for line in result.stderrLines {
                #expect(line.contains("timed out") && !line.contains("HTTPClientError") && !line.contains("Error."), "\(line)")
            }
        }
    }
}
#endif
