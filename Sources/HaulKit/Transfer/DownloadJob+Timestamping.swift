import Foundation

extension DownloadJob {
    /// wget's `-N`: when the destination is a file Haul holds no download for, asks with `If-Modified-Since` its
    /// time first. Returns the result of leaving it as it is when the server's copy is not newer; `nil` to download
    /// it (the new file then replaces it once complete). A check that keeps failing gives up as a download would.
    ///
    /// With `--checksum`, a file left as it is must have that checksum: one that does not is downloaded again, as
    /// aria2c's `--conditional-get --checksum` does (and replaced only once the new file has it).
    func checkTimestamp() async throws -> DownloadResult? {
        guard options.timestamping, record == nil, machine.held == .none, case .file(let path) = options.destination,
              let local = POSIX.regularFileSizeAndTime(path) else { return nil }
        let extra: HTTPFields = ["If-Modified-Since": Timestamping.ifModifiedSince(localTime: local.modified)]
        var rules = RetryRules(machine.configuration.rules, held: 0, seed: UInt64.random(in: 0...UInt64.max))
        while true {
            try Task.checkCancellation()
            rules.requestSent()
            let failure: TransientFailure
            do {
                let (response, url) = try await sender.send(.whole, to: options.url, readAhead: 1, extra: extra)
                let head = RequestSender.head(response)
                let length = head.headers["content-length"].flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
                let unchanged = Timestamping.isUnchanged(
                    status: head.status, lastModified: head.headers["last-modified"], contentLength: length,
                    localTime: local.modified, localSize: local.size)
                logger.debug("\(head.status) from \(Redaction.url(url)) to If-Modified-Since: \(unchanged ? "not modified, kept" : "fetching it")")
                // Its body is not needed either way: dropping it closes that connection.
                guard unchanged else { return nil }
                if let expected = options.checksum, try await digestOfExistingFile(path, expected.algorithm) != expected.hex {
                    events(.restarted(reason: "\(path) is not older than the server's copy, but does not have the \(expected.algorithm.rawValue) asked for; downloading it again"))
                    return nil
                }
                let result = DownloadResult(path: path, bytes: local.size, fetchedBytes: 0, checksum: options.checksum, alreadyComplete: true, notModified: true)
                events(.finished(result))
                return result
            } catch let transient as TransientFailure {
                failure = transient
            }
            switch rules.failed(failure.ruleFailure, held: 0) {
            case .requestAgain:
                continue
            case .retry(let retry):
                events(.retrying(retry: retry.retry, maxRetries: retry.of, delay: retry.after, reason: retry.reason))
                try await Task.sleep(for: retry.after)
            case .giveUp(let why):
                throw Self.error(for: why)
            }
        }
    }

    /// The digest of the file at `path` in the destination's folder (opened there, never through a link), off the
    /// concurrency threads.
    private func digestOfExistingFile(_ path: String, _ algorithm: ChecksumAlgorithm) async throws -> String {
        let file = try openInFolder(path, writable: false)
        defer { file.close() }
        return try await BlockingIO.run { () throws(HaulError) in
            try Checksummer.hashing(file, upTo: try file.status().size, algorithm).hexDigest()
        }
    }
}
