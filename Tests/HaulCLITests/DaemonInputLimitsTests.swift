#if os(Linux)
import Foundation
import Glibc
import Testing

extension DaemonNeighbourTests {
    /// Issue 10, unfinished lines, against the real daemon: one connection holds at most one line of 1 MiB, all of them
    /// together at most 64 MiB, a line left unfinished is timed out, and the memory comes back when the connections
    /// close. The line handler's rules on a clock the test moves (a trickled line, a busy daemon's clock standing
    /// still) are HaulDaemonTests' (InboundLinesTests).
    @Suite(.serialized) struct DaemonInputLimitsTests {
        /// A request's head with no end: what a hostile client leaves in the daemon.
        static func unfinished(_ size: Int) -> [UInt8] {
            let head = Array(#"{"jsonrpc":"2.0","id":1,"method":"daemon.hello","params":{"protocol":1,"pad":""#.utf8)
            return head + [UInt8](repeating: UInt8(ascii: "p"), count: size - head.count)
        }

        @Test func unfinishedLinesStayWithinTheSharedBudgetAndTheirMemoryComesBack() async throws {
            try await Sandbox.with { sandbox in
                // A long line timeout: here the budget, not the clock, must close the connections.
                let daemon = try await DaemonHarness.start(sandbox, ["--partial-line-timeout", "600"])
                let socket = DaemonHarness.socket(sandbox)
                let bystander = try RawSocketClient(path: socket)
                #expect(DaemonHarness.int(try bystander.call("daemon.hello", ["protocol": 1], id: 0).result?["protocol"]) == 1)
                let baseline = try #require(DaemonHarness.residentBytes(daemon.pid))

                // 120 connections each try to leave 1 MiB unfinished: 120 MiB against a 64 MiB budget.
                var holders: [RawSocketClient] = [], refused: [RawSocketClient] = []
                for _ in 0..<120 {
                    let client = try RawSocketClient(path: socket)
                    do {
                        try client.send(Self.unfinished((1 << 20) - 16), timeout: .seconds(10))
                    } catch {
                        // The daemon closed the connection while it was still sending: refused.
                    }
                    holders.append(client)
                }
                // Each connection is either held (the daemon has read all it sent, twice in a row) or was told why it
                // is closed.
                var verdicts: [Int: Bool] = [:], drained: Set<Int> = []
                try await eventually("each connection is held or refused", timeout: .seconds(60), step: .milliseconds(100)) {
                    for (index, client) in holders.enumerated() where verdicts[index] == nil {
                        if client.pendingBytes() != 0 {
                            let line = try client.readLine(timeout: .seconds(5)) ?? "(closed without a word)"
                            let message = (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
                            let error = message?["error"] as? [String: Any]
                            #expect((error?["code"] as? NSNumber)?.intValue == -32600, "refused with: \(line.prefix(300))")
                            #expect((error?["message"] as? String)?.contains("unfinished") == true, "\(line.prefix(300))")
                            #expect(client.waitForClose(timeout: .seconds(5)), "a refused connection is closed")
                            verdicts[index] = false
                            refused.append(client)
                        } else if client.unreadByPeer() == 0 {
                            if drained.contains(index) { verdicts[index] = true } else { drained.insert(index) }
                        }
                    }
                    return verdicts.count == holders.count
                }
                #expect(refused.count >= 120 - 64, "only \(refused.count) of 120 connections were refused by a 64 MiB budget")
                #expect(refused.count < 120, "a budget of 64 MiB holds some of them")
                let held = try #require(DaemonHarness.residentBytes(daemon.pid))
                #expect(held - baseline < 64 << 20 + 48 << 20, "resident memory grew by \((held - baseline) >> 20) MiB")

                // The daemon still serves others, with complete lines (even while the budget is spent).
                let hello = try bystander.call("daemon.hello", ["protocol": 1], id: 1)
                #expect(DaemonHarness.int(hello.result?["protocol"]) == 1, "the bystander: \(hello)")
                let fresh = try RawSocketClient(path: socket).call("daemon.status", id: 2)
                #expect(fresh.result?["sessions"] is [Any], "a new connection: \(fresh)")

                // Closed connections give their memory back.
                for client in holders { client.disconnect() }
                try await eventually("the daemon's memory comes back", timeout: .seconds(30), step: .milliseconds(250)) {
                    (DaemonHarness.residentBytes(daemon.pid) ?? .max) - baseline < 16 << 20
                }
                // And the budget is whole again: a new connection may hold a line of 1 MiB.
                let again = try RawSocketClient(path: socket)
                try again.send(Self.unfinished((1 << 20) - 16), timeout: .seconds(10))
                try again.send(Array(#""}}"#.utf8) + [10])
                let answered = try again.readMessage(timeout: .seconds(10))
                #expect(DaemonHarness.int(answered.result?["protocol"]) == 1, "\(answered)")
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }

        @Test func aLineLeftUnfinishedIsTimedOutButASlowSteadyOneIsServed() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox, ["--partial-line-timeout", "2"])
                let socket = DaemonHarness.socket(sandbox)
                let stalled = try RawSocketClient(path: socket)
                try stalled.send(Self.unfinished(4_096))
                // A client that finishes its line within the timeout, in pieces, is answered.
                let steady = try RawSocketClient(path: socket)
                let request = Array(#"{"jsonrpc":"2.0","id":"steady","method":"daemon.hello","params":{"protocol":1}}"#.utf8) + [10]
                for piece in stride(from: 0, to: request.count, by: 20) {
                    try steady.send(Array(request[piece..<min(request.count, piece + 20)]))
                    try await Task.sleep(for: .milliseconds(100))
                }
                let answered = try steady.readMessage(timeout: .seconds(10))
                #expect(answered.id == "\"steady\"" && DaemonHarness.int(answered.result?["protocol"]) == 1, "\(answered)")
                // An idle connection with nothing unfinished is never timed out.
                let idle = try RawSocketClient(path: socket)
                // The stalled one is told and closed.
                let error = try stalled.readMessage(timeout: .seconds(30))
                #expect(error.errorCode == -32600 && error.id == "null", "\(error)")
                #expect(error.errorMessage.contains("unfinished"), "\(error)")
                #expect(stalled.waitForClose(timeout: .seconds(5)), "the stalled connection is closed")
                let stillThere = try idle.call("daemon.hello", ["protocol": 1], id: "idle")
                #expect(DaemonHarness.int(stillThere.result?["protocol"]) == 1, "the idle connection: \(stillThere)")
                // Over 1 MiB unfinished is refused at once, without waiting for a newline.
                let long = try RawSocketClient(path: socket)
                var sendError = "none"
                do { try long.send(Self.unfinished((1 << 20) + 4_096), timeout: .seconds(10)) } catch { sendError = "\(error)" }
                let tooLong = try long.readMessage(timeout: .seconds(10))
                #expect(tooLong.errorCode == -32600 && tooLong.errorMessage.contains("exceeds"), "\(tooLong) (send: \(sendError))")
                #expect(long.waitForClose(timeout: .seconds(5)))
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
            }
        }

        @Test func sigtermIsAnsweredWithinTwoSecondsWhileClientsHoldUnfinishedLines() async throws {
            try await Sandbox.with { sandbox in
                let daemon = try await DaemonHarness.start(sandbox)
                let socket = DaemonHarness.socket(sandbox)
                var clients: [RawSocketClient] = []
                for index in 0..<50 {
                    let client = try RawSocketClient(path: socket)
                    try client.send(Self.unfinished(64 << 10 + index))
                    clients.append(client)
                }
                let subscriber = try RawSocketClient(path: socket)
                _ = try subscriber.call("session.open", ["session": "s"], id: 1)
                _ = try subscriber.call("events.subscribe", ["session": "s"], id: 2)
                try await DaemonHarness.expectAnswersAndStopsWithinTwoSeconds(daemon, sandbox)
                for client in clients { client.disconnect() }
            }
        }
    }
}

#endif
