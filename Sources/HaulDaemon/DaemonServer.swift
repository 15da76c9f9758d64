import HaulKit
import Foundation
import Logging
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// `haul daemon`: serves the control protocol (docs/protocol.md) on a private Unix socket and runs the
/// background sessions' transfers.
package final class DaemonServer: Sendable {
    package let location: DaemonLocation
    /// What the daemon's methods do: also the web dashboard's bridge (HaulWeb) calls it.
    package let service: DaemonService
    private let logger: Logger
    private let lock: FileLock
    private let serverChannel: NIOAsyncChannel<NIOAsyncChannel<ByteBuffer, ByteBuffer>, Never>
    /// The clients' connections, from accepted to closed.
    private let connections = AcceptedConnections<ByteBuffer, ByteBuffer>()
    private let idleExit: Duration

    /// Takes the socket (refusing when another daemon holds it), restores the sessions it ran before and
    /// starts listening, within `limits`. Its sessions are kept by `catalog` (default: under `HAUL_HOME`; a fleet's
    /// database), which it closes at shutdown. Call ``run()`` next.
    package init(
        location: DaemonLocation, home: HaulHome, logger: Logger, limits: DaemonLimits = DaemonLimits(),
        catalog: (any SessionCatalog)? = nil
    ) async throws {
        self.location = location
        self.logger = logger
        self.idleExit = limits.idleExit
        // HAUL_HOME first, owner-only: the socket's folder may be inside it, and making that would leave its parents
        // at the umask's mode (0755) until a session's store made HAUL_HOME private.
        try home.prepare()
        try location.prepareDirectory()
        MemoryReturn.prepare()
        let budget = InputBudget(limit: limits.unfinishedInputBudget)
        let lineTimeout = TimeAmount.nanoseconds(
            limits.partialLineTimeout.components.seconds * 1_000_000_000 + limits.partialLineTimeout.components.attoseconds / 1_000_000_000)
        let lock = try FileLock(path: location.lockPath, busy: HaulError(.busy, "a haul daemon is already running on \(location.socketPath)", reason: .busy))
        self.lock = lock
        // Written before the socket exists, so whoever can connect can also find the pid.
        let pid = "\(getpid())\n"
        _ = FileManager.default.createFile(atPath: location.pidPath, contents: Data(pid.utf8), attributes: [.posixPermissions: 0o600])
        // The socket is created 0600 (no moment where others could connect), and any stale one is replaced.
        unlink(location.socketPath)
        let oldMask = umask(0o177)
        defer { umask(oldMask) }
        let connections = self.connections
        do {
            serverChannel = try await ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(.backlog, value: 256)
                .bind(unixDomainSocketPath: location.socketPath) { channel in
                    PeerCredentials.uid(of: channel).flatMapThrowing { uid in
                        if let uid, uid != PeerCredentials.ownUID {
                            logger.warning("refused a connection from uid \(uid)")
                            channel.close(promise: nil)
                            throw HaulError(.usage, "refused a connection from uid \(uid)")
                        }
                        try channel.pipeline.syncOperations.addHandler(InboundLineHandler(budget: budget, timeout: lineTimeout))
                        // At most two received lines wait to be handled: then the connection is not read.
                        return try connections.admit(channel) {
                            try NIOAsyncChannel<ByteBuffer, ByteBuffer>(
                                wrappingChannelSynchronously: channel,
                                configuration: .init(backPressureStrategy: .init(lowWatermark: 1, highWatermark: 2)))
                        }
                    }
                }
        } catch {
            unlink(location.pidPath)
            lock.release()
            throw HaulError(.fileSystem, "could not listen on \(location.socketPath): \(error)")
        }
        chmod(location.socketPath, 0o600)
        service = DaemonService(home: home, logger: logger, limits: limits, catalog: catalog)
        await service.restoreSessions()
        await service.startSweeping()
        await service.startFollowingFleet()
        logger.info("haul daemon \(HaulVersion.string) listening on \(location.socketPath)")
    }

    /// Serves clients until ``shutdown()``, or until the daemon has been idle for ``DaemonLimits/idleExit`` (then it
    /// stops listening and returns once its last connection has ended; call ``shutdown()`` next).
    package func run() async throws {
        let watcher = idleExit > .zero ? Task { await self.stopListeningWhenIdle() } : nil
        defer { watcher?.cancel() }
        try await connections.serve(serverChannel) { connection, id in await self.serve(connection, id: id) }
    }

    /// Looks at what the daemon does every so often; once ``IdleExit`` says it has been idle long enough, closes the
    /// listening socket, which ends ``run()``. Ends then, or when cancelled.
    private func stopListeningWhenIdle() async {
        var rule = IdleExit(limit: idleExit)
        let start = ContinuousClock.now
        // Each turn sleeps for the rule's interval (at least 50 ms) or ends.
        while !Task.isCancelled {
            let (tasks, requests) = await service.activity()
            let activity = IdleExit.Activity(tasks: tasks, connections: connections.openCount, requests: requests)
            switch rule.observe(activity, at: ContinuousClock.now - start) {
            case .exit:
                logger.info("nothing to do for \(Int(idleExit.seconds.rounded())) s (no task running or waiting, no client); exiting")
                try? await serverChannel.channel.close()
                return
            case .stay(let wait):
                guard let wait else { return }
                try? await Task.sleep(for: wait)
            }
        }
    }

    /// Stops listening, checkpoints every running download and closes the sessions.
    package func shutdown() async {
        try? await serverChannel.channel.close()
        await service.shutdown()
        connections.closeOpen()
        unlink(location.socketPath)
        unlink(location.pidPath)
        lock.release()
        logger.info("haul daemon stopped")
    }

    private func serve(_ connection: NIOAsyncChannel<ByteBuffer, ByteBuffer>, id: Int) async {
        let channel = connection.channel
        logger.debug("connection \(id) opened")
        let outbox = ConnectionOutbox(id: id) {
            channel.close(promise: nil)
        }
        do {
            try await connection.executeThenClose { inbound, outbound in
                try await withThrowingTaskGroup(of: Void.self) { group in
                    group.addTask {
                        for await line in outbox.lines {
                            try await outbound.write(ByteBuffer(string: line))
                            outbox.written(line)
                        }
                    }
                    do {
                        for try await line in inbound { await self.handle(line, outbox) }
                    } catch let error as InputLimitError {
                        logger.debug("connection \(id): \(error.rpcError.message)")
                        outbox.send(JSONRPC.response(id: .null, error: error.rpcError))
                    }
                    // Whatever is queued goes out before the connection closes.
                    outbox.finish()
                    try await group.next()
                    group.cancelAll()
                }
            }
        } catch {
            logger.debug("connection \(id) ended: \(error)")
        }
        outbox.finish()
        await service.disconnected(outbox)
        MemoryReturn.soon()
    }

    private func handle(_ line: ByteBuffer, _ outbox: ConnectionOutbox) async {
        if let answer = await service.answer(line.readableBytesView, from: outbox) { outbox.send(answer) }
    }
}
