import HaulKit
import NIOConcurrencyHelpers
#if canImport(Glibc)
import Glibc
#endif

/// Gives the memory of closed connections back to the system. glibc keeps freed memory for reuse, and raises
/// its threshold for mapping large blocks each time one is freed, so a burst of connections holding large
/// unfinished lines would stay in the daemon's resident size long after they closed. The daemon fixes that
/// threshold (large buffers are mapped, and unmapped when freed) and trims the heap after connections close.
package enum MemoryReturn {
    private static let trimScheduled = NIOLockedValueBox(false)

    /// Fixes glibc's mmap threshold at 128 KiB (no effect elsewhere).
    package static func prepare() {
        #if os(Linux)
        typealias Mallopt = @convention(c) (Int32, Int32) -> Int32
        // RTLD_DEFAULT is a null handle on glibc; M_MMAP_THRESHOLD is -3.
        guard let symbol = dlsym(nil, "mallopt") else { return }
        _ = unsafeBitCast(symbol, to: Mallopt.self)(-3, 128 << 10)
        #endif
    }

    /// Trims the heap once, a moment after a burst of connections has closed.
    package static func soon() {
        #if os(Linux)
        let first = trimScheduled.withLockedValue { scheduled -> Bool in
            defer { scheduled = true }
            return !scheduled
        }
        guard first else { return }
        Task.detached {
            try? await Task.sleep(for: .milliseconds(500))
            trimScheduled.withLockedValue { $0 = false }
            typealias MallocTrim = @convention(c) (Int) -> Int32
            guard let symbol = dlsym(nil, "malloc_trim") else { return }
            _ = unsafeBitCast(symbol, to: MallocTrim.self)(0)
        }
        #endif
    }
}
