import Testing
@testable import HaulCore

/// What a batch prints besides its live view: per-file lines while they fit, a summary naming the failures, and
/// live lines for the downloads that move (or say why they do not).
@Suite struct BatchReportTests {
    static let failures = (1...14).map { index in
        BatchReport.Failure(
            url: "http://127.0.0.1:8080/batch/file-\(index).bin",
            message: "http://127.0.0.1:8080/batch/file-\(index).bin answered 404 Not Found; check the URL and any headers it needs")
    }

    @Test func theSummaryNamesTheFirstTenFailuresAndCountsTheRest() {
        let plain = BatchReport.summary(finished: 1_986, failures: Self.failures, width: nil)
        #expect(plain.count == 12)
        #expect(plain[0] == "1986 finished, 14 failed")
        #expect(plain[1] == "  http://127.0.0.1:8080/batch/file-1.bin answered 404 Not Found; check the URL and any headers it needs",
                "whole, the URL once")
        #expect(plain[10].contains("file-10.bin") && plain[11] == "  … and 4 more")
        #expect(BatchReport.summary(finished: 3, failures: [], width: 80) == ["3 finished, 0 failed"])

        let fitted = BatchReport.summary(finished: 1_986, failures: Self.failures, width: 60)
        #expect(fitted.count == 12 && fitted.allSatisfy { TerminalText.width($0) <= 60 }, "\(fitted)")
        #expect(fitted[1].hasPrefix("  http://") && fitted[1].contains("/batch/file-1.bin: answered 404"), "the URL's end kept: \(fitted[1])")
    }

    @Test func anInterruptedBatchSaysWhatItPausedAndWhatHadFailed() {
        #expect(BatchReport.interruptedLine(paused: 3, failed: 0) == "paused 3 downloads; run the same command again to resume")
        #expect(BatchReport.interruptedLine(paused: 1, failed: 0) == "paused 1 download; run the same command again to resume")
        #expect(BatchReport.interruptedLine(paused: 286, failed: 214) == "paused 286 downloads, 214 failed; run the same command again to resume and retry them")
    }

    @Test func aFailureIsNamedByItsFileWhenItHasOne() {
        let failure = BatchReport.Failure(url: "http://h/x?sig=***", path: "/data/out/report-2024.pdf", message: "connection refused (h:80)")
        #expect(BatchReport.failureLine(failure, width: 80) == "report-2024.pdf: connection refused (h:80)")
        #expect(BatchReport.failureLine(failure, width: nil) == "http://h/x?sig=***: connection refused (h:80)")
        #expect(BatchReport.failureLine(failure, lead: "failed ", width: 30) == "failed report-2024.pdf: conne…")
    }

    /// A reason too long for the line keeps what to do (after its last "; ") and shortens what happened.
    @Test func aLongReasonKeepsWhatToDo() {
        let failure = BatchReport.Failure(
            url: "https://127.0.0.1:18777/static/1.bin",
            message: "TLS handshake with 127.0.0.1:18777 failed: the server's certificate is not trusted (self signed); give its CA with --cacert FILE")
        let line = BatchReport.failureLine(failure, lead: "  ", width: 80)
        #expect(TerminalText.width(line) <= 80 && line.hasSuffix("; give its CA with --cacert FILE") && line.contains("TLS handshake"), "\(line)")
        // Too narrow for both: cut at the end as before.
        #expect(BatchReport.failureLine(failure, lead: "  ", width: 40).hasSuffix("…"))
    }

    /// Any URL, path and message at any width: the line fits and holds no control character.
    @Test func failureLinesFitAnyWidth() {
        let alphabet: [Character] = Array("abc/:?=.-_0123456789 ") + ["日", "👨‍👩‍👧", "\u{1B}", "\n", "\u{202E}"]
        forAll(count: 1_000, seed: 2_627) { random in
            let url = "http://" + random.string(from: alphabet, maxLength: 80)
            let failure = BatchReport.Failure(
                url: url, path: Bool.random(using: &random) ? random.string(from: alphabet, maxLength: 60) : nil,
                message: (Bool.random(using: &random) ? url + " " : "") + random.string(from: alphabet, maxLength: 120))
            let width = Int.random(in: 1...200, using: &random)
            for line in [BatchReport.failureLine(failure, lead: "  ", width: width),
                         BatchReport.savedLine(path: failure.path ?? url, size: "1.0 MiB", width: width)] {
                #expect(TerminalText.width(line) <= width, "at \(width): \(line)")
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x202E }, "\(line)")
            }
        }
    }

    @Test func savedLinesKeepTheFileName() {
        let path = "/home/someone/Downloads/batch-of-many/file-01999.bin"
        #expect(BatchReport.savedLine(path: path, size: "16.0 KiB", width: nil) == "saved \(path) (16.0 KiB)")
        #expect(BatchReport.savedLine(path: path, size: "16.0 KiB", width: 50) == "saved /home/som…-of-many/file-01999.bin (16.0 KiB)")
        #expect(BatchReport.keptLine(path: path, width: nil) == "\(path) is already there; not retrieving it (-nc)")
        for width in 20...90 {
            #expect(TerminalText.width(BatchReport.keptLine(path: path, width: width)) <= width, "\(width)")
        }
    }

    @Test func perFileLinesStopBeforeTheyPushTheLiveViewOffTheScreen() {
        // 24 rows, 3 at once: a view of 5 lines, the notice and the cursor leave 17 for files.
        #expect(BatchReport.listedLines(rows: 24, live: 3) == 17)
        #expect(BatchReport.listedLines(rows: 20, live: 3) == 13)
        #expect(BatchReport.listedLines(rows: 24, live: 64) == 0)
        #expect(BatchReport.listedLines(rows: 3, live: 1) == 0)
        for rows in 1...60 {
            for live in 0...70 {
                let listed = BatchReport.listedLines(rows: rows, live: live)
                let view = min(live + 2, max(rows - 1, 1))
                #expect(listed >= 0 && (listed == 0 || listed + 1 + view < rows), "\(rows) rows, \(live) live: \(listed)")
            }
        }
    }

    // MARK: The live view

    @Test func startingDownloadsAreCountedNotListed() {
        let moving = (1...2).map { ProgressLine.State(name: "moving-\($0).bin", bytes: 4 << 20, total: 8 << 20, bytesPerSecond: 1_048_576) }
        let starting = (1...5).map { ProgressLine.State(name: "starting-\($0).bin", bytes: nil) }
        let retrying = ProgressLine.State(name: "flaky.bin", bytes: nil, note: "retry 2/5 in 4 s: connection refused (127.0.0.1:9)")
        let view = ProgressLine.view(starting + [moving[0], retrying, moving[1]], summary: "total", width: 79, height: 24)
        #expect(view == [
            "moving-1.bin  4.0 MiB / 8.0 MiB  50%  1.0 MiB/s",
            "flaky.bin  retry 2/5 in 4 s: connection refused (127.0.0.1:9)",
            "moving-2.bin  4.0 MiB / 8.0 MiB  50%  1.0 MiB/s",
            "5 starting",
            "total",
        ])
        let crowded = ProgressLine.view(moving + moving + starting, summary: "total", width: 79, height: 4)
        #expect(crowded == ["moving-1.bin  4.0 MiB / 8.0 MiB  50%  1.0 MiB/s", "… and 3 more, 5 starting", "total"])
    }

    @Test func aNoteTakesThePlaceOfTheFiguresAndTheDetailOnlySpareRoom() {
        let retrying = ProgressLine.State(
            name: "a-rather-long-file-name-of-a-flaky-download.iso", bytes: 1 << 20, total: 8 << 20,
            note: "retry 2/5 in 4 s: connection refused (127.0.0.1:9)")
        #expect(ProgressLine.render(retrying, width: 200) == "a-rather-long-file-name-of-a-flaky-download.iso  retry 2/5 in 4 s: connection refused (127.0.0.1:9)")
        #expect(ProgressLine.render(retrying, width: 60) == "a-rath…d.iso  retry 2/5 in 4 s: connection refused (127.0.0…")
        let named = ProgressLine.State(name: "f.bin", bytes: 1 << 20, total: 2 << 20, detail: "http://127.0.0.1:8080/files/f.bin")
        #expect(ProgressLine.render(named, width: 120) == "f.bin  1.0 MiB / 2.0 MiB  50%  http://127.0.0.1:8080/files/f.bin")
        #expect(ProgressLine.render(named, width: 40) == "f.bin  1.0 MiB / 2.0 MiB  50%", "no room: no URL")
        let alphabet: [Character] = Array("abc/:.- 0123456789") + ["日", "\u{1B}", "👨‍👩‍👧"]
        forAll(count: 1_000, seed: 2_628) { random in
            let state = ProgressLine.State(
                name: Bool.random(using: &random) ? random.string(from: alphabet, maxLength: 60) : nil,
                bytes: Bool.random(using: &random) ? random.magnitude() : nil, total: random.magnitude(),
                note: Bool.random(using: &random) ? random.string(from: alphabet, maxLength: 80) : nil,
                detail: Bool.random(using: &random) ? random.string(from: alphabet, maxLength: 80) : nil)
            let width = Int.random(in: 0...160, using: &random)
            let line = ProgressLine.render(state, width: width)
            #expect(TerminalText.width(line) <= width, "at \(width): \(line)")
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 }, "\(line)")
        }
    }

    @Test func theSummaryCountsWaitingTasksWhenThereAreAny() {
        #expect(ProgressLine.summary(finished: 1, failed: 0, running: 2, waiting: 5, bytesPerSecond: 0, width: 80)
                == "total: 1 finished, 0 failed, 2 running, 5 waiting  0 B/s")
        #expect(ProgressLine.summary(finished: 1, failed: 0, running: 2, bytesPerSecond: 0, width: 80)
                == "total: 1 finished, 0 failed, 2 running  0 B/s")
        // Why they wait: every slot is taken, or the session holds them.
        #expect(ProgressLine.summary(finished: 0, failed: 0, running: 3, waiting: 5, atOnce: 3, bytesPerSecond: 0, width: 80)
                == "total: 0 finished, 0 failed, 3 running, 5 waiting (3 at once)  0 B/s")
        #expect(ProgressLine.summary(finished: 0, failed: 0, running: 0, waiting: 5, atOnce: 0, bytesPerSecond: 0, width: 80)
                == "total: 0 finished, 0 failed, 0 running, 5 waiting (0 at once)  0 B/s")
        #expect(ProgressLine.summary(finished: 0, failed: 0, running: 1, waiting: 5, atOnce: 3, bytesPerSecond: 0, width: 80)
                == "total: 0 finished, 0 failed, 1 running, 5 waiting  0 B/s", "slots free: another cap (per host) or about to start")
        // Slots free, and the per-host limit holds the rest: said, with or without a known number waiting.
        #expect(ProgressLine.summary(finished: 0, failed: 0, running: 8, waiting: 12, atOnce: 16, heldBackPerHost: 8, bytesPerSecond: 0, width: 100)
                == "total: 0 finished, 0 failed, 8 running, 12 waiting (held back: 8 per host)  0 B/s")
        #expect(ProgressLine.summary(finished: 3, failed: 0, running: 8, heldBackPerHost: 8, bytesPerSecond: 0, width: 80)
                == "total: 3 finished, 0 failed, 8 running (held back: 8 per host)  0 B/s")
        // Fewer running than the limit: the session's word is a moment old (downloads ended since), not shown.
        #expect(ProgressLine.summary(finished: 4, failed: 0, running: 5, waiting: 10, atOnce: 16, heldBackPerHost: 8, bytesPerSecond: 0, width: 100)
                == "total: 4 finished, 0 failed, 5 running, 10 waiting  0 B/s")
        // Narrow: the speed goes before the reason, the reason before the counts.
        #expect(ProgressLine.summary(finished: 0, failed: 0, running: 8, waiting: 12, heldBackPerHost: 8, bytesPerSecond: 0, width: 70)
                == "0 finished, 0 failed, 8 running, 12 waiting (held back: 8 per host)")
        #expect(ProgressLine.summary(finished: 0, failed: 0, running: 8, waiting: 12, heldBackPerHost: 8, bytesPerSecond: 0, width: 60)
                == "0 finished, 0 failed, 8 running, 12 waiting")
    }

    @Test func aSavedFileIsIntactOnlyAsARegularFileOfTheLengthSaved() {
        #expect(BatchReport.savedFile(found: nil, saved: 10) == .gone)
        #expect(BatchReport.savedFile(found: (true, 10), saved: 10) == .intact)
        #expect(BatchReport.savedFile(found: (true, 0), saved: 0) == .intact)
        for length in [Int64(0), 9, 11, -1] { #expect(BatchReport.savedFile(found: (true, length), saved: 10) == .changed(length: length)) }
        #expect(BatchReport.savedFile(found: (false, 10), saved: 10) == .changed(length: nil), "a link or a folder of the same length")
        #expect(BatchReport.changedLine(path: "/d/f", length: 100, saved: 5_003)
                == "/d/f is not the file saved (100 B, saved 4.9 KiB); it is left as it is, and the URL is fetched again under a free name")
        #expect(BatchReport.changedLine(path: "/d/f", length: nil, saved: 5).contains("(not a regular file, saved 5 B)"))
    }
}
