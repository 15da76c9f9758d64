import NIOConcurrencyHelpers

/// The engine's events of a session's running downloads, in the order they came, until the session reads them.
///
/// One inbox for all of a session's downloads: a download posts its events from whatever thread it runs on, and the
/// session takes them in batches (``take()``). Only a post into an inbox that nobody is about to read asks for a
/// read (``post(_:_:)`` returns `true`), so many downloads ending at once cost the session one wake-up, not one per
/// event; a stream per download woke its reader for each.
final class DownloadEventInbox: Sendable {
    private struct State {
        var events: [(id: String, event: DownloadEvent)] = []
        /// Whether a read was asked for and has not yet found the inbox empty.
        var readAsked = false
    }

    private let state = NIOLockedValueBox(State())

    /// Adds `event` of download `id`; `true` when the caller is to ask the session to read the inbox.
    func post(_ id: String, _ event: DownloadEvent) -> Bool {
        state.withLockedValue { state in
            state.events.append((id, event))
            guard !state.readAsked else { return false }
            state.readAsked = true
            return true
        }
    }

    /// Every event posted and not yet taken, oldest first. Empty once there are none, and the next post asks for a
    /// read again.
    func take() -> [(id: String, event: DownloadEvent)] {
        state.withLockedValue { state in
            guard !state.events.isEmpty else {
                state.readAsked = false
                return []
            }
            let events = state.events
            state.events.removeAll(keepingCapacity: true)
            return events
        }
    }
}
