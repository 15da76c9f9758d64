// RFC 9110 §14 (Range requests) and §13.1.5 (If-Range) for `TestServer.serve`.

/// Turns a `Resource` plus a request into a `ResponsePlan`, applying the resource's faults.
enum RangeResponder {
    /// A single byte range request, as written by the client.
    enum ByteRangeSpec: Equatable {
        case closed(first: Int, last: Int)  // a-b
        case from(first: Int)  // a-
        case suffix(length: Int)  // -n
    }

    enum RangeResolution: Equatable {
        case satisfiable(first: Int, last: Int)
        case unsatisfiable
    }

    static func plan(for resource: Resource, request: RecordedRequest) -> ResponsePlan {
        let faults = resource.faults
        var resource = resource
        if !faults.backends.isEmpty {
            let backend = faults.backends[request.index % faults.backends.count]
            resource.etag = backend.etag
            if let body = backend.body { resource.body = body }
        }
        if let forced = faults.statusForFirstRequests, request.index < forced.count {
            var headers: [(String, String)] = []
            if let retryAfter = forced.retryAfter { headers.append(("Retry-After", retryAfter)) }
            return .text(forced.status, "injected status \(forced.status)\n", headers: headers)
        }

        let isHead = request.method == "HEAD"
        guard request.method == "GET" || isHead else {
            return .text(405, "method not allowed\n", headers: [("Allow", "GET, HEAD")])
        }

        let length = resource.body.count
        var validators: [(String, String)] = []
        if let etag = resource.etag { validators.append(("ETag", etag)) }
        if let lastModified = resource.lastModified { validators.append(("Last-Modified", lastModified)) }
        validators += resource.extraHeaders
        var common: [(String, String)] = []
        if let type = resource.contentType { common.append(("Content-Type", type)) }
        common += validators
        if let disposition = resource.contentDisposition { common.append(("Content-Disposition", disposition)) }
        if resource.acceptRanges { common.append(("Accept-Ranges", "bytes")) }

        var resolution: RangeResolution? = nil
        if resource.acceptRanges, !faults.ignoreRange,
            let rangeHeader = request.header("Range"),
            let spec = parseSingleRange(rangeHeader),
            faults.ignoreIfRange || ifRangeAllowsRange(request.header("If-Range"), resource: resource)
        {
            resolution = resolve(spec, length: length)
        }

        switch resolution {
        case .unsatisfiable:
            return ResponsePlan(
                status: 416,
                headers: [("Content-Range", "bytes */\(length)")] + validators
            )

        case .satisfiable(let first, let last):
            // The whole window moves (clamped to the resource), so the lie is self-consistent.
            let shift = faults.contentRangeStartShift
            let shiftedFirst = min(max(0, first + shift), length - 1)
            var shiftedLast = min(max(last + shift, shiftedFirst), length - 1)
            if let cap = faults.maxRangeLength { shiftedLast = min(shiftedLast, shiftedFirst + max(1, cap) - 1) }
            let complete = faults.wrongCompleteLength ?? length
            let body = Array(resource.body[shiftedFirst...shiftedLast])
            let headers = common + [("Content-Range", "bytes \(shiftedFirst)-\(shiftedLast)/\(complete)")]
            return ResponsePlan(
                status: 206,
                headers: headers,
                body: body,
                delivery: isHead ? .normal : delivery(for: faults, index: request.index, chunked: false)
            )

        case nil:
            return ResponsePlan(
                status: 200,
                headers: common,
                body: resource.body,
                delivery: isHead ? .normal : delivery(for: faults, index: request.index, chunked: faults.chunked)
            )
        }
    }

    static func delivery(for faults: Faults, index: Int, chunked: Bool) -> Delivery {
        var options = DeliveryOptions(framing: chunked ? .chunked : .contentLength)
        if let n = faults.dropAfterBytes, index < faults.dropOnRequests {
            options.interruption = .drop(afterBytes: n)
        } else if let n = faults.stallAfterBytes, index < faults.stallOnRequests {
            options.interruption = .stall(afterBytes: n)
        }
        options.bytesPerSecond = faults.throttleBytesPerSecond
        return .custom(options)
    }

    /// Parses `bytes=<spec>` with exactly one range spec. Returns nil for anything else
    /// (other units, syntax errors, multiple ranges) — the caller then serves the full body.
    static func parseSingleRange(_ value: String) -> ByteRangeSpec? {
        let trimmed = value.trimmingHTTPWhitespace()
        guard let eq = trimmed.firstIndex(of: "=") else { return nil }
        guard trimmed[..<eq].trimmingHTTPWhitespace().lowercased() == "bytes" else { return nil }
        let set = trimmed[trimmed.index(after: eq)...]
        let specs = set.split(separator: ",", omittingEmptySubsequences: true)
            .map { $0.trimmingHTTPWhitespace() }
            .filter { !$0.isEmpty }
        guard specs.count == 1, let spec = specs.first, let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash].trimmingHTTPWhitespace()
        let lastText = spec[spec.index(after: dash)...].trimmingHTTPWhitespace()
        if firstText.isEmpty {
            guard let suffix = parseDigits(lastText) else { return nil }
            return .suffix(length: suffix)
        }
        guard let first = parseDigits(firstText) else { return nil }
        if lastText.isEmpty { return .from(first: first) }
        guard let last = parseDigits(lastText), last >= first else { return nil }
        return .closed(first: first, last: last)
    }

    static func resolve(_ spec: ByteRangeSpec, length: Int) -> RangeResolution {
        switch spec {
        case .closed(let first, let last):
            guard first < length else { return .unsatisfiable }
            return .satisfiable(first: first, last: min(last, length - 1))
        case .from(let first):
            guard first < length else { return .unsatisfiable }
            return .satisfiable(first: first, last: length - 1)
        case .suffix(let n):
            guard n > 0, length > 0 else { return .unsatisfiable }
            return .satisfiable(first: max(0, length - n), last: length - 1)
        }
    }

    /// RFC 9110 §13.1.5: the Range applies only if the If-Range validator matches.
    static func ifRangeAllowsRange(_ ifRange: String?, resource: Resource) -> Bool {
        guard let raw = ifRange else { return true }
        let value = raw.trimmingHTTPWhitespace()
        if value.hasPrefix("\"") || value.hasPrefix("W/") {
            // Strong comparison: both must be strong and identical.
            guard let etag = resource.etag, !etag.hasPrefix("W/"), !value.hasPrefix("W/") else { return false }
            return etag == value
        }
        guard let lastModified = resource.lastModified else { return false }
        return lastModified.trimmingHTTPWhitespace() == value
    }

    private static func parseDigits(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text) ?? Int.max  // absurdly large positions saturate
    }
}

extension StringProtocol {
    func trimmingHTTPWhitespace() -> String {
        let text = Substring(self)
        var start = text.startIndex
        var end = text.endIndex
        while start < end, text[start] == " " || text[start] == "\t" { start = text.index(after: start) }
        while start < end {
            let before = text.index(before: end)
            guard text[before] == " " || text[before] == "\t" else { break }
            end = before
        }
        return String(text[start..<end])
    }
}
