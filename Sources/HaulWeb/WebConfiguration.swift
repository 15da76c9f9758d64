import HaulKit

/// How the daemon's web dashboard listens (`haul daemon --web …`, or `web.start`).
package struct WebConfiguration: Sendable {
    /// The address to listen on (default loopback).
    package var host = WebListenPolicy.defaultHost
    /// The port; nil means ``WebListenPolicy/defaultPort`` or the next free one.
    package var port: Int?
    /// PEM files for HTTPS (`--web-cert`, `--web-key`).
    package var certificatePath: String?
    package var keyPath: String?
    /// `--web-allow-remote`: a non-loopback address is allowed (with TLS).
    package var allowRemote = false
    /// `--web-allow-host`: names accepted in the `Host` header besides the loopback ones.
    package var allowedHosts: [String] = []
    /// `--web-allow-commands`: the dashboard's bridge may set completion commands (which run as the daemon's user).
    package var allowCommands = false
    /// How many connections may wait for a credential, and how long a request may take to arrive (``WebConnectionGate``);
    /// nil: the defaults for this process's descriptor limit.
    package var connectionLimits: WebConnectionGate.Limits?
    /// How many event streams may be open, and how long a session's event ring outlives its last stream.
    package var streamLimits = WebStreamLimits()

    package init() {}

    package var hasTLS: Bool { certificatePath != nil && keyPath != nil }

    /// Why this configuration cannot be used, as one line; nil when it can.
    package var refusal: String? {
        if (certificatePath == nil) != (keyPath == nil) { return "--web-cert and --web-key go together: give both files" }
        return WebListenPolicy.refusal(host: host, allowRemote: allowRemote, hasTLS: hasTLS)
    }
}
