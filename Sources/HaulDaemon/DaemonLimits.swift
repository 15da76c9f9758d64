/// What `haul daemon` grants its clients at most, so that no local process of the same user (nor any number
/// of them) can starve it of descriptors or memory. See docs/protocol.md, "Limits".
package struct DaemonLimits: Sendable, Equatable {
    /// Sessions open at once. Opening another closes the least recently used idle one, or is refused.
    package var maxOpenSessions = 64
    /// An open session with nothing waiting or running, no subscriber and no request for this long is closed
    /// (its descriptors are released; the next request naming it opens it again).
    package var sessionIdleTimeout: Duration = .seconds(60)
    /// Bytes of unfinished lines held for all connections together; a connection whose new partial data does
    /// not fit is closed with an error.
    package var unfinishedInputBudget = 64 << 20
    /// A connection that keeps an unfinished line this long (counting only time the daemon is ready to read
    /// more of it) is closed with an error.
    package var partialLineTimeout: Duration = .seconds(10)
    /// The daemon exits after this long with no task running or waiting, no client connected and no request under
    /// way (``IdleExit``); zero, the default, means never. Daemons the CLI starts by itself get
    /// ``DaemonLauncher/autostartIdleExit``.
    package var idleExit: Duration = .zero

    package init() {}
}
