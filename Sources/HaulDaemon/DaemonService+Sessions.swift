import HaulKit
import Foundation

// The daemon's sessions: which exist, opening them (at most `limits.maxOpenSessions` at once), closing idle
// ones, restoring them at start and closing them all at shutdown.
extension DaemonService {
    /// Reopens the sessions the daemon ran before (those with a saved configuration) that have a task waiting or
    /// running: their tasks resume. The others stay closed until a request names them.
    func restoreSessions() async {
        for name in await catalog.sessionsWithWork() {
            guard (try? SessionFolder.validate(identifier: name)) != nil else { continue }
            do {
                _ = try await session(name)
                logger.info("restored session \(name)")
            } catch {
                logger.error("could not restore session \(name): \(error)")
            }
        }
    }

    /// Closes idle sessions every so often (see ``closeIdleSessions()``) until shutdown.
    func startSweeping() {
        guard sweeper == nil else { return }
        let interval = min(max(limits.sessionIdleTimeout / 4, .milliseconds(100)), .seconds(15))
        sweeper = Task { [weak self] in
            // Ends when the daemon shuts down (cancelled) or the service is gone.
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                guard let self, !Task.isCancelled else { return }
                await self.closeIdleSessions()
            }
        }
    }

    /// Stops every session: running downloads save their progress and resume when the daemon starts again.
    func shutdown() async {
        shuttingDown = true
        sweeper?.cancel()
        follower?.cancel()
        await web?.stop()
        for (_, task) in opening { _ = try? await task.value }
        for (_, task) in closing { await task.value }
        await withTaskGroup(of: Void.self) { group in
            for (_, session) in sessions { group.addTask { await session.close() } }
        }
        for (_, pump) in pumps { await pump.value }
        sessions = [:]
        for (_, connections) in subscribers { for (_, subscriber) in connections { subscriber.outbox.finish() } }
        subscribers = [:]
        await follower?.value
        await catalog.close()
    }

    // MARK: Opening

    /// The open session `name`, opened on use from its saved configuration. Only with `creating` may a session
    /// that does not exist be made (its folder and saved configuration); otherwise that is a `noSuchSession`
    /// error and nothing is written. With `changes`, the configuration is updated and saved; a changed session is
    /// reopened (its downloads resume at once).
    func session(_ name: String, creating: Bool = false, configuring changes: Params? = nil) async throws -> LocalSession {
        // Each turn either returns, throws, or waits for an opening or closing of this session, or for an idle
        // session to close; the bound only guards against a session flapping forever.
        for _ in 0..<1_000 {
            if let pending = opening[name] {
                _ = try? await pending.value
                continue
            }
            if let pending = closing[name] {
                await pending.value
                continue
            }
            guard !shuttingDown else { throw HaulError(.interrupted, "the haul daemon is shutting down; try again in a moment") }
            if let open = sessions[name] {
                lastUsed[name] = .now
                guard let changes else { return open }
                return try await reconfigure(open, name, changes)
            }
            let saved = try await catalog.settings(of: name)
            let exists = saved != nil
            guard exists || creating else { throw RPCError.noSuchSession(name) }
            if openCount >= limits.maxOpenSessions {
                guard await closeLeastRecentlyUsedIdleSession() else {
                    throw HaulError(
                        .busy,
                        "the haul daemon has \(limits.maxOpenSessions) sessions open, none of them idle; try again when one has finished its tasks")
                }
                continue
            }
            var configuration = saved.map { self.configuration(name, from: $0) } ?? defaultConfiguration()
            if let changes { try DaemonProtocol.apply(changes, to: &configuration) }
            if !exists || changes != nil { try await saveConfiguration(configuration, for: name) }
            let task = Task { try await self.open(name, configuration) }
            opening[name] = task
            return try await task.value
        }
        throw HaulError(.busy, "session \(name) keeps opening and closing; try again", reason: .busy)
    }

    /// Sessions open or being opened.
    private var openCount: Int { sessions.count + opening.keys.filter { sessions[$0] == nil }.count }

    /// Applies `changes` to an open session: saved, then carried out (a new concurrency at once, anything else by
    /// reopening the session).
    private func reconfigure(_ open: LocalSession, _ name: String, _ changes: Params) async throws -> LocalSession {
        var configuration: SessionConfiguration
        if let known = configurations[name] { configuration = known } else { configuration = try await loadConfiguration(name) }
        let old = DaemonProtocol.encode(configuration)
        try DaemonProtocol.apply(changes, to: &configuration)
        let new = DaemonProtocol.encode(configuration)
        guard old != new else { return open }
        try await saveConfiguration(configuration, for: name)
        configurations[name] = configuration
        if Self.onlyConcurrencyDiffers(old, new) {
            await open.setMaxConcurrentDownloads(configuration.maxConcurrentDownloads)
            return open
        }
        let task = Task { try await self.open(name, configuration) }
        opening[name] = task
        return try await task.value
    }

    /// (Re)opens a session with `configuration` (closing the open one first) and starts forwarding its events.
    private func open(_ name: String, _ configuration: SessionConfiguration) async throws -> LocalSession {
        defer { opening[name] = nil }
        if let old = sessions.removeValue(forKey: name) {
            await old.close()
            await pumps.removeValue(forKey: name)?.value
        }
        var settings = configuration
        settings.home = home
        let session = try await LocalSession(identifier: name, configuration: settings, journaling: true, store: catalog.store(for: name))
        sessions[name] = session
        configurations[name] = configuration
        lastUsed[name] = .now
        let events = await session.journaledEvents()
        pumps[name] = Task { [weak self] in
            for await (event, sequence, node) in events { await self?.broadcast(name, event, sequence, from: node) }
        }
        logger.info("opened session \(name)")
        return session
    }

    private static func onlyConcurrencyDiffers(_ old: JSONValue, _ new: JSONValue) -> Bool {
        guard var old = old.objectValue, var new = new.objectValue else { return false }
        old["maxConcurrentDownloads"] = nil
        new["maxConcurrentDownloads"] = nil
        return old == new
    }

    /// What the daemon is doing, for ``IdleExit``: tasks running or waiting in its open sessions, and requests under
    /// way (sessions being opened or closed count as requests).
    func activity() async -> (tasks: Int, requests: Int) {
        var tasks = 0
        for session in sessions.values { tasks += await session.activeTaskCount() }
        return (tasks, inUse.values.reduce(0, +) + opening.count + closing.count + (web?.openConnections() ?? 0))
    }

    // MARK: Closing idle sessions

    /// Closes every session that has been idle (see ``isIdle(_:)``) for ``DaemonLimits/sessionIdleTimeout``.
    func closeIdleSessions() async {
        let cutoff = ContinuousClock.now - limits.sessionIdleTimeout
        for name in sessions.keys.sorted() where (lastUsed[name] ?? cutoff) <= cutoff {
            guard !shuttingDown else { return }
            if await isIdle(name), (lastUsed[name] ?? cutoff) <= cutoff { await close(name, why: "idle") }
        }
    }

    /// Closes the idle session used longest ago, to make room; false when no session is idle.
    private func closeLeastRecentlyUsedIdleSession() async -> Bool {
        let byAge = sessions.keys.sorted { (lastUsed[$0] ?? .now) < (lastUsed[$1] ?? .now) }
        for name in byAge where await isIdle(name) {
            await close(name, why: "idle, to make room for another")
            return true
        }
        return false
    }

    /// Open, with no request under way, no subscriber, and no task waiting or running. Checked again after
    /// the session is asked, since requests may have come in meanwhile.
    private func isIdle(_ name: String) async -> Bool {
        func quiet() -> Bool {
            sessions[name] != nil && opening[name] == nil && closing[name] == nil && inUse[name] == nil
                && (subscribers[name]?.isEmpty ?? true)
        }
        guard quiet(), let session = sessions[name] else { return false }
        return await session.isIdle() && quiet()
    }

    /// Closes an open session: its descriptors are released; the next request naming it opens it again.
    private func close(_ name: String, why: String) async {
        guard let session = sessions.removeValue(forKey: name) else { return }
        let pump = pumps.removeValue(forKey: name)
        configurations[name] = nil
        lastUsed[name] = nil
        subscribers[name] = nil
        let task = Task {
            await session.close()
            await pump?.value
        }
        closing[name] = task
        await task.value
        closing[name] = nil
        logger.info("closed session \(name) (\(why))")
    }

    // MARK: Saved configurations

    /// Whether the session exists: it has saved settings (written by `session.open` and `tasks.add`).
    func hasSavedConfiguration(_ name: String) async throws -> Bool {
        try await catalog.settings(of: name) != nil
    }

    private func defaultConfiguration() -> SessionConfiguration {
        var configuration = SessionConfiguration()
        configuration.home = home
        // `daemon --verbose`: every download's requests, answers and resume decisions too, as `haul get -v` logs them
        // (URLs masked).
        if logger.logLevel <= .debug { configuration.logger = logger }
        return configuration
    }

    private func loadConfiguration(_ name: String) async throws -> SessionConfiguration {
        guard let saved = try await catalog.settings(of: name) else { return defaultConfiguration() }
        return configuration(name, from: saved)
    }

    /// The configuration `saved` describes; the defaults (with a warning) when it cannot be used.
    private func configuration(_ name: String, from saved: JSONValue) -> SessionConfiguration {
        var configuration = defaultConfiguration()
        guard let object = saved.objectValue else {
            logger.warning("ignoring the saved configuration of session \(name) (it is not a JSON object); using defaults")
            return configuration
        }
        do {
            try DaemonProtocol.apply(Params(object), to: &configuration)
        } catch {
            logger.warning("ignoring the saved configuration of session \(name) (\(error.message)); using defaults")
            return defaultConfiguration()
        }
        return configuration
    }

    private func saveConfiguration(_ configuration: SessionConfiguration, for name: String) async throws {
        try await catalog.saveSettings(DaemonProtocol.encode(configuration), for: name)
    }
}
