import Testing
@testable import HaulCore

/// The step a download takes for each answer, after the resume rules: every branch, without a network.
@Suite struct ResponseHeadStepTests {
    private let big = ResourceInfo(validators: Validators(entityTag: EntityTag("\"v2\"")), totalLength: 64 << 20, acceptsRanges: true)
    private let small = ResourceInfo(validators: Validators(entityTag: EntityTag("\"v2\"")), totalLength: 1000, acceptsRanges: true)

    private func context(_ change: (inout ResponseHeadStep.Context) -> Void = { _ in }) -> ResponseHeadStep.Context {
        var context = ResponseHeadStep.Context()
        change(&context)
        return context
    }

    @Test func statusAnswersPassThrough() {
        #expect(ResponseHeadStep.decide(.redirect(location: "/x"), context()) == .redirectNotFollowed(location: "/x"))
        #expect(ResponseHeadStep.decide(.retry(status: 503, retryAfter: "5"), context()) == .retry(status: 503, retryAfter: "5"))
        #expect(ResponseHeadStep.decide(.fail(status: 404), context()) == .refused(status: 404))
        #expect(ResponseHeadStep.decide(.protocolViolation("bad"), context()) == .protocolViolation("bad"))
    }

    @Test func aCompleteAnswerRecordsAnEmptyFileOnlyWhenNothingIsOpen() {
        #expect(ResponseHeadStep.decide(.alreadyComplete, context()) == .complete(recordEmptyFile: true))
        #expect(ResponseHeadStep.decide(.alreadyComplete, context { $0.fileOpen = true }) == .complete(recordEmptyFile: false))
    }

    @Test func bytesThatCannotBeContinuedAreNeverDiscardedWhenTheyAreNotHaulsOwn() {
        let changed = RestartReason.resourceChanged("ETag changed")
        #expect(ResponseHeadStep.decide(.restart(changed), context()) == .restart(changed))
        // A file given to --continue, or another URL's bytes: a failure, never a silent restart over them.
        #expect(ResponseHeadStep.decide(.restart(changed), context { $0.adopted = true }) == .adoptedFileDiffers(changed.description))
        #expect(ResponseHeadStep.decide(.restart(changed), context { $0.foreign = true }) == .foreignBytesDiffer(changed.description))
        #expect(ResponseHeadStep.decide(.writeWhole(small, bodyLength: 1000), context { $0.adopted = true; $0.held = 10 })
                == .adoptedFileUncheckable)
        #expect(ResponseHeadStep.decide(.writeWhole(small, bodyLength: 1000), context { $0.foreign = true; $0.held = 10 })
                == .foreignBytesDiffer("the server does not support byte ranges, so they cannot be checked"))
    }

    /// More bytes held than the server's whole file: Haul's own bytes mean the file changed (start over); a file given
    /// to --continue was never a partial copy of it (refused as not this download's, not blamed on the server).
    @Test func bytesHeldPastTheServersEndAreAChangeOrAFileThatIsNotThisDownloads() {
        let past = RestartReason.heldPastEnd(length: 1000, held: 1500)
        #expect(ResponseHeadStep.decide(.restart(past), context()) == .restart(past))
        #expect(ResponseHeadStep.decide(.restart(past), context { $0.adopted = true }) == .adoptedFileLonger(length: 1000, held: 1500))
        #expect(ResponseHeadStep.decide(.restart(past), context { $0.foreign = true }) == .foreignBytesDiffer(past.description))
    }

    @Test func aWholeAnswerIsWrittenAndSaysWhy() {
        // A probe answered with 200: one connection, and the reason is announced.
        #expect(ResponseHeadStep.decide(.writeWhole(big, bodyLength: nil), context { $0.probing = true })
                == .writeWhole(big, announceSingleConnection: true, replacingHeldBytes: false))
        // Bytes held, and the server sent the whole file of the same version: replaced, and said so.
        let heldSame = context { $0.held = 4096; $0.heldValidators = big.validators }
        #expect(ResponseHeadStep.decide(.writeWhole(big, bodyLength: nil), heldSame)
                == .writeWhole(big, announceSingleConnection: false, replacingHeldBytes: true))
    }

    @Test func aNewVersionThatWouldBeSplitStartsOverWithEveryConnection() {
        let heldOld = context { $0.held = 4096; $0.heldValidators = Validators(entityTag: EntityTag("\"v1\"")) }
        #expect(ResponseHeadStep.decide(.writeWhole(big, bodyLength: nil), heldOld) == .restart(.resourceChanged("the server sent a new version")))
        // Not when it would not be split: one segment asked for, a small file, ranges distrusted, or no range support.
        for kept in [
            context { $0.held = 4096; $0.heldValidators = Validators(entityTag: EntityTag("\"v1\"")); $0.segments = 1 },
            context { $0.held = 4096; $0.heldValidators = Validators(entityTag: EntityTag("\"v1\"")); $0.rangesTrusted = false },
        ] {
            #expect(ResponseHeadStep.decide(.writeWhole(big, bodyLength: nil), kept)
                    == .writeWhole(big, announceSingleConnection: false, replacingHeldBytes: true))
        }
        #expect(ResponseHeadStep.decide(.writeWhole(small, bodyLength: nil), heldOld)
                == .writeWhole(small, announceSingleConnection: false, replacingHeldBytes: true))
        var noRanges = big
        noRanges.acceptsRanges = false
        #expect(ResponseHeadStep.decide(.writeWhole(noRanges, bodyLength: nil), heldOld)
                == .writeWhole(noRanges, announceSingleConnection: false, replacingHeldBytes: true))
    }

    @Test func aProbesPartialAnswerSaysHowManyConnections() {
        let probe = context { $0.probing = true }
        guard case .append(_, 0, .segmented(let parts)?) = ResponseHeadStep.decide(.append(big, bodyLength: big.totalLength ?? 0, overlap: 0), probe) else {
            Issue.record("a 64 MiB file with ranges and a validator is split")
            return
        }
        #expect(parts > 1)
        #expect(ResponseHeadStep.decide(.append(big, bodyLength: 1, overlap: 0), context { $0.probing = true; $0.segments = 1 })
                == .append(big, overlap: 0, connections: .single(reason: nil)))
        // Not a probe (bytes held): continue over this connection, nothing to decide about segments.
        #expect(ResponseHeadStep.decide(.append(big, bodyLength: 10, overlap: 40), context { $0.held = 100 })
                == .append(big, overlap: 40, connections: nil))
        // A probe whose answer has no length: one connection, with the reason to announce.
        let unknown = ResourceInfo(validators: big.validators, totalLength: nil, acceptsRanges: true)
        #expect(ResponseHeadStep.decide(.append(unknown, bodyLength: 10, overlap: 0), probe)
                == .append(unknown, overlap: 0, connections: .single(reason: "the server did not say how long the file is")))
    }
}

/// What `--verbose` prints of a decision: words, never a Swift value, and a redirect's secrets masked.
@Suite struct DecisionWordsTests {
    private let info = ResourceInfo(
        validators: Validators(entityTag: EntityTag("\"v2\""), lastModified: "Tue, 15 Nov 1994 08:12:31 GMT"), totalLength: 1000, acceptsRanges: true)

    @Test func everyStepReadsAsWords() {
        let steps: [ResponseHeadStep] = [
            .redirectNotFollowed(location: "ftp://u:pw@example.com/x?X-Amz-Signature=abc"), .retry(status: 503, retryAfter: "5"),
            .refused(status: 404), .protocolViolation("bad"), .impossibleLength(1 << 62), .complete(recordEmptyFile: true),
            .complete(recordEmptyFile: false), .adoptedFileDiffers("ETag changed"), .adoptedFileUncheckable, .adoptedFileLonger(length: 10, held: 20),
            .foreignBytesDiffer("why"), .restart(.overlapMismatch),
            .writeWhole(info, announceSingleConnection: true, replacingHeldBytes: true),
            .append(info, overlap: 65536, connections: .segmented(parts: 4)),
            .append(info, overlap: 0, connections: .single(reason: "the file is too small to split")),
        ]
        for step in steps {
            let words = step.description
            #expect(!words.contains("HaulCore") && !words.contains("Optional(") && !words.isEmpty, "\(words)")
            #expect(!words.contains("pw@") && !words.contains("=abc"), "a redirect's secrets are masked: \(words)")
        }
        #expect(ResponseHeadStep.append(info, overlap: 65536, connections: .segmented(parts: 4)).description
                == "continue after the bytes held, checking the 65536 before them (1000 bytes, ETag \"v2\", Last-Modified Tue, 15 Nov 1994 08:12:31 GMT, ranges), 4 connections")
        #expect(ResponseHeadStep.retry(status: 503, retryAfter: "5").description == "retry later (503, Retry-After 5)")
    }

    @Test func everyDecisionReadsAsWords() {
        let decisions: [ResponseDecision] = [
            .writeWhole(info, bodyLength: 1000), .append(info, bodyLength: 10, overlap: 10), .append(info, bodyLength: 10, overlap: 0),
            .alreadyComplete, .restart(.resourceChanged("ETag changed")), .redirect(location: "https://u:pw@example.com/"),
            .retry(status: 429, retryAfter: nil), .fail(status: 410), .protocolViolation("bad"), .impossibleLength(1 << 62),
        ]
        for decision in decisions {
            let words = decision.description
            #expect(!words.contains("HaulCore") && !words.contains("Optional(") && !words.contains("pw@"), "\(words)")
        }
        #expect(ResponseDecision.restart(.resourceChanged("ETag changed")).description == "restart from byte 0: the file on the server changed (ETag changed)")
    }
}
