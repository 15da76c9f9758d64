import Foundation
import HaulTestSupport

/// Small tmpfs mounts for real "disk full" conditions (needs root, like `FileSystemErrorTests`).
enum Tmpfs {
    private static func run(_ arguments: [String]) -> Bool {
        let process = ChildProcess()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = arguments
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        let deadline = ContinuousClock.now + .seconds(10)
        while process.isRunning, ContinuousClock.now < deadline { usleep(10_000) }
        if process.isRunning {
            process.terminate()
            return false
        }
        return process.terminationStatus == 0
    }

    static func mount(_ directory: String, size: String) -> Bool {
        try? FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return run(["mount", "-t", "tmpfs", "-o", "size=\(size)", "tmpfs", directory])
    }

    static func remount(_ directory: String, size: String) -> Bool {
        remount(directory, options: "size=\(size)")
    }

    static func remount(_ directory: String, options: String) -> Bool {
        run(["mount", "-o", "remount,\(options)", directory])
    }

    static func unmount(_ directory: String) { _ = run(["umount", "-l", directory]) }

    /// Whether this machine lets the tests mount a tmpfs.
    static let available: Bool = {
        let probe = NSTemporaryDirectory() + "haul-tmpfs-probe-" + UUID().uuidString
        defer { try? FileManager.default.removeItem(atPath: probe) }
        guard mount(probe, size: "64k") else { return false }
        unmount(probe)
        return true
    }()
}
