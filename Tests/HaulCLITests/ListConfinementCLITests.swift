#if os(Linux)
import Foundation
import Glibc
import HaulTestSupport
import Testing

/// A URL list's `dir=` and `out=` never place a file outside the folder the command names, whoever wrote the list:
/// not through a symbolic link inside that folder, not at a hidden name (`.ssh/authorized_keys`), not as the folder
/// itself (`out=.`); the same for `haul get -i` and `haul add -i`.
@Suite struct ListConfinementCLITests {
    /// `dl/link -> ../outside`: `dir=link` and `out=link/x.bin` are refused by name when their downloads run (the
    /// other entries are saved), and nothing reaches `outside/`.
    @Test func aListDoesNotGoThroughALinkInsideTheFolder() async throws {
        try await withTestServer { server in
            for name in ["f1", "f2", "f3"] { server.serve("/\(name).bin", Resource(body: TestData.bytes(3_000, seed: 7_700), etag: "\"\(name)\"")) }
            try await Sandbox.with { box in
                try FileManager.default.createDirectory(atPath: box.path("dl"), withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: box.path("outside"), withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: box.path("dl/link"), withDestinationPath: box.path("outside"))
                let list = "\(server.url("/f1.bin"))\n  dir=link\n\(server.url("/f2.bin"))\n  out=link/x.bin\n\(server.url("/f3.bin"))\n  out=kept/ok.bin\n"
                try list.write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let result = try await box.run(["get", "-i", "list.txt", "--dir", "dl"])
                #expect(result.exitCode == 2, "\(result.stderr)")
                #expect(result.stderr.contains("\(box.path("dl/link")) is a symbolic link, and a URL list's dir= and out= do not go through links"), "\(result.stderr)")
                #expect(result.stderr.contains("1 finished"), "\(result.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: box.path("outside")).isEmpty)
                #expect(fileExists(box.path("dl/kept/ok.bin")))
                #expect(server.requests("/f1.bin").isEmpty && server.requests("/f2.bin").isEmpty, "refused before any request")

                // The folder the command names may itself be a link of the user's: it is opened as named.
                try FileManager.default.createSymbolicLink(atPath: box.path("alias"), withDestinationPath: box.path("dl"))
                try "\(server.url("/f1.bin"))\n  dir=sub\n".write(toFile: box.path("sub.txt"), atomically: true, encoding: .utf8)
                let through = try await box.run(["get", "-i", "sub.txt", "--dir", "alias"])
                #expect(through.exitCode == 0, "\(through.stderr)")
                #expect(fileExists(box.path("dl/sub/f1.bin")))
            }
        }
    }

    /// Run from a home folder, `out=.ssh/authorized_keys` or `dir=.config/autostart` would plant what the shell or
    /// the desktop runs: refused before any request, as a server's name loses its leading dot.
    @Test func aListNamesNothingHidden() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: [1, 2, 3], etag: "\"h\""))
            try await Sandbox.with { box in
                let lists = [
                    ("  out=.ssh/authorized_keys\n", "out=.ssh/authorized_keys names a hidden folder (.ssh)"),
                    ("  dir=.config/autostart\n  out=evil.desktop\n", "dir=.config/autostart names a hidden folder (.config)"),
                    ("  out=.bashrc\n", "out=.bashrc names a hidden file (.bashrc)"),
                ]
                for (options, message) in lists {
                    try "\(server.url("/f.bin"))\n\(options)".write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                    for command in ["get", "add"] {
                        let refused = try await box.run([command, "-i", "list.txt"])
                        #expect(refused.exitCode == 2 && refused.stderr.contains(message) && refused.stderr.contains("line 1"),
                                "\(command): \(refused.stderr)")
                        #expect(refused.stderr.split(separator: "\n").count == 1, "one line: \(refused.stderr)")
                    }
                }
                #expect(box.workContents() == ["list.txt"], "\(box.workContents())")
                #expect(server.requests("/f.bin").isEmpty)
                // -o on the command line is the user's own: any name.
                let typed = try await box.run(["get", server.url("/f.bin"), "-o", ".hidden/f.bin"])
                #expect(typed.exitCode == 0 && fileExists(box.path(".hidden/f.bin")), "\(typed.stderr)")
            }
        }
    }

    /// `out=.` saved the file as the --dir folder, `out=sub/.` as a file named `sub`: refused, as `-o dir/` is.
    @Test func anOutThatNamesAFolderIsRefused() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: [1, 2, 3], etag: "\"d\""))
            try await Sandbox.with { box in
                for (out, message) in [(".", "out=. names a folder, not a file in it"), ("sub/.", "out=sub/. names a folder, not a file in it"),
                                       ("sub/", "out=sub/ names a folder"), ("a//b", "out=a//b has an empty or \".\" part"),
                                       ("./b", "out=./b has an empty or \".\" part")] {
                    try "\(server.url("/f.bin"))\n  out=\(out)\n".write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                    for command in ["get", "add"] {
                        let refused = try await box.run([command, "-i", "list.txt", "--dir", "b"])
                        #expect(refused.exitCode == 2 && refused.stderr.contains(message), "\(command) out=\(out): \(refused.stderr)")
                    }
                    #expect(!fileExists(box.path("b")), "out=\(out)")
                }
                #expect(server.requests("/f.bin").isEmpty)
            }
        }
    }

    /// The daemon's tasks keep the guarantee: a link already there is refused when the list is added, and one put
    /// there after (while the task waits) fails the task when it runs; nothing reaches `outside/`.
    @Test func theDaemonsTasksDoNotGoThroughALinkEither() async throws {
        try await withTestServer { server in
            server.serve("/f.bin", Resource(body: TestData.bytes(3_000, seed: 7_701), etag: "\"q\""))
            try await Sandbox.with { box in
                let daemon = try await DaemonHarness.start(box)
                try FileManager.default.createDirectory(atPath: box.path("dl"), withIntermediateDirectories: true)
                try FileManager.default.createDirectory(atPath: box.path("outside"), withIntermediateDirectories: true)
                try FileManager.default.createSymbolicLink(atPath: box.path("dl/link"), withDestinationPath: box.path("outside"))
                try "\(server.url("/f.bin"))\n  out=link/x.bin\n".write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let refused = try await box.run(["add", "-i", "list.txt", "--dir", "dl", "--no-autostart"])
                #expect(refused.exitCode == 2 && refused.stderr.contains("\(box.path("dl/link")) is a symbolic link"), "\(refused.stderr)")
                #expect(refused.stdoutLines.isEmpty)

                #expect(try await box.run(["session", "set", "--max-concurrent", "0", "--no-autostart"]).exitCode == 0)
                try "\(server.url("/f.bin"))\n  dir=later\n".write(toFile: box.path("list.txt"), atomically: true, encoding: .utf8)
                let added = try await box.run(["add", "-i", "list.txt", "--dir", "dl", "--no-autostart"])
                let id = try #require(added.stdoutLines.first, "\(added.stderr)")
                try FileManager.default.createSymbolicLink(atPath: box.path("dl/later"), withDestinationPath: box.path("outside"))
                #expect(try await box.run(["session", "set", "--max-concurrent", "1", "--no-autostart"]).exitCode == 0)
                let waited = try await box.run(["wait", id, "--no-autostart"])
                #expect(waited.exitCode != 0 && waited.stderr.contains("\(box.path("dl/later")) is a symbolic link"), "\(waited.stderr)")
                #expect(try FileManager.default.contentsOfDirectory(atPath: box.path("outside")).isEmpty)
                #expect(server.requests("/f.bin").isEmpty)
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, box)
            }
        }
    }
}
#endif
