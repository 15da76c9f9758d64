import Foundation

extension Sandbox {
    /// Runs `haul ARGS` like `run(_:timeout:)`, with `input` on its stdin (a pipe closed after writing it).
    func runFeedingStdin(_ arguments: [String], input: String, timeout: Duration = .seconds(40)) async throws -> HaulResult {
        try await start(arguments, input: Data(input.utf8)).wait(timeout: timeout)
    }
}

extension Sandbox {
    /// Runs `haul ARGS` as the child of a python that forks it (a real fork: posix_spawn's child shares the test
    /// runner's memory until it execs, and the kernel would count that as its peak) and reads its `ru_maxrss`: the
    /// result, and the most memory haul had resident. Needs python3.
    func runMeasuringMemory(_ arguments: [String], standardInput: FileHandle? = nil, timeout: Duration = .seconds(40)) async throws -> (HaulResult, Int) {
        let report = root + "/peak-\(UUID().uuidString)"
        let script = """
            import os, sys
            pid = os.fork()
            if pid == 0:
                os.execv(sys.argv[2], sys.argv[2:])
            _, status, usage = os.wait4(pid, 0)
            open(sys.argv[1], 'w').write(str(usage.ru_maxrss * 1024))
            code = os.waitstatus_to_exitcode(status)
            sys.exit(code if code >= 0 else 128 - code)
            """
        let run = try start(["-c", script, report, try HaulBinary.path()] + arguments, standardInput: standardInput,
                            binary: try ExternalTools.requirePython())
        let result = try await run.wait(timeout: timeout)
        guard let text = try? String(contentsOfFile: report, encoding: .utf8), let peak = Int(text) else {
            throw HarnessError("no peak memory reported for haul \(arguments.joined(separator: " ")): \(result.stderr)")
        }
        return (result, peak)
    }
}
