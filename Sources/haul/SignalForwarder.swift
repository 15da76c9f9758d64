import Dispatch
import Foundation

/// Turns the first SIGINT, SIGTERM or SIGHUP (the terminal closed) into a clean stop (`onSignal`): the state is saved,
/// and the same command resumes; a second one exits at once.
final class SignalForwarder: @unchecked Sendable {
    private var sources: [DispatchSourceSignal] = []

    /// `signals`: the daemon, its own session, leaves SIGHUP alone (it is no terminal's).
    init(signals: [Int32] = [SIGINT, SIGTERM, SIGHUP], onSignal: @escaping @Sendable () -> Void) {
        let queue = DispatchQueue(label: "haul.signals")
        let count = SignalCount()
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler {
                if count.increment() > 1 { exit(130) }
                onSignal()
            }
            source.resume()
            sources.append(source)
        }
    }

    func stop() {
        sources.forEach { $0.cancel() }
    }
}

private final class SignalCount: @unchecked Sendable {
    private var value = 0
    private let lock = NSLock()
    func increment() -> Int {
        lock.lock()
        defer { lock.unlock() }
        value += 1
        return value
    }
}
