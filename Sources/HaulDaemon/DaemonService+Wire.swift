import HaulKit

// The wire's side of the service: one request line in, the line to answer with out. The socket server hands it every
// line it reads; the in-process tests (Tests/HaulDaemonTests) hand it theirs.
extension DaemonService {
    /// Carries out one JSON-RPC request line from `caller` on `outbox`'s connection (where its events go): the line to
    /// answer with (ending in a newline), or nil for a notification. An answer over the line limit becomes an error.
    package nonisolated func answer(_ line: some Collection<UInt8>, from outbox: ConnectionOutbox, caller: DaemonCaller = .owner) async -> String? {
        switch JSONRPC.decodeRequest(line) {
        case .failure(let failure):
            return JSONRPC.response(id: failure.id, error: failure.error)
        case .success(let request):
            let result = await handle(request, from: outbox, caller: caller)
            guard let id = request.id else { return nil }
            switch result {
            case .success(let value):
                let line = JSONRPC.response(id: id, result: value)
                guard line.utf8.count <= DaemonProtocol.maxResponseBytes + 1 else {
                    // Never dropped silently: the client learns why, and can ask for pages.
                    let why = "the answer to \(request.method) would take \(line.utf8.count) bytes, over the daemon's "
                        + "\(DaemonProtocol.maxResponseBytes); ask for less (see \"limit\")"
                    return JSONRPC.response(id: id, error: .haul(HaulError(.server, why)))
                }
                return line
            case .failure(let error):
                return JSONRPC.response(id: id, error: error)
            }
        }
    }
}
