import Testing
@testable import HaulCore

/// The layout of live progress for a terminal: display widths, shortening with `…`, and lines that fit any width.
@Suite struct ProgressLineTests {
    static let widths = [20, 40, 80, 200]
    static let gib: Int64 = 1 << 30

    static let iso = ProgressLine.State(
        name: "ubuntu-24.04.1-desktop-amd64-with-a-long-name.iso", bytes: 3 * gib / 2, total: 6 * gib,
        bytesPerSecond: 12.5 * 1024 * 1024, secondsRemaining: 371)
    static let wide = ProgressLine.State(
        name: "日本語のとても長いファイル名-データセット-最終版.tar", bytes: 300 << 20, total: 1_200 << 20,
        bytesPerSecond: 2 * 1024 * 1024, secondsRemaining: 4_000)

    // MARK: Display width

    @Test func widthCountsColumnsNotBytesOrCharacters() {
        #expect(TerminalText.width("haul") == 4)
        #expect(TerminalText.width("日本語") == 6)
        #expect(TerminalText.width("ｈａｕｌ") == 8, "fullwidth forms")
        #expect(TerminalText.width("한국어") == 6)
        #expect(TerminalText.width("café") == 4)
        #expect(TerminalText.width("cafe\u{301}") == 4, "a combining accent joins its letter")
        #expect(TerminalText.width("📦") == 2)
        #expect(TerminalText.width("🇯🇵") == 2, "a flag is one cluster of two columns")
        #expect(TerminalText.width("👨‍👩‍👧") == 2, "a ZWJ sequence is one cluster")
        #expect(TerminalText.width("☂\u{FE0F}") == 2, "VS16 shows a text symbol as an emoji")
        #expect(TerminalText.width("a\u{200B}b") == 2, "a zero-width space takes no column")
        #expect(TerminalText.width("Ωμέγα") == 5)
    }

    @Test func sanitizedReplacesControlsAndDirectionOverrides() {
        #expect(TerminalText.sanitized("\u{1B}[2J\u{1B}]0;title\u{07}x.iso") == "?[2J?]0;title?x.iso")
        #expect(TerminalText.sanitized("a\u{9B}b\u{7F}c\n") == "a?b?c?", "C1 CSI, DEL, newline")
        #expect(TerminalText.sanitized("evil\u{202E}osi.exe") == "evil?osi.exe")
        #expect(TerminalText.sanitized("日本語.tar") == "日本語.tar")
    }

    @Test func fitShortensAtTheEndOrInTheMiddleWithinTheWidth() {
        #expect(TerminalText.fit("abcdefghij", width: 10) == "abcdefghij")
        #expect(TerminalText.fit("abcdefghij", width: 5) == "abcd…")
        #expect(TerminalText.fit("abcdefghij", width: 5, cut: .middle) == "ab…ij")
        #expect(TerminalText.fit("abcdefghij", width: 1, cut: .middle) == "…")
        #expect(TerminalText.fit("abcdefghij", width: 0) == "")
        // A wide character is never split: the result may be a column short.
        #expect(TerminalText.fit("日本語のファイル", width: 7, cut: .middle) == "日…ル")
        #expect(TerminalText.fit("日本語のファイル", width: 6) == "日本…")
        for text in ["日本語のとても長いファイル名.tar", "cafe\u{301}-👨‍👩‍👧-🇯🇵-long-name.bin", String(repeating: "x", count: 300)] {
            for width in 0...40 {
                for cut in [TerminalText.Cut.end, .middle] {
                    let fitted = TerminalText.fit(text, width: width, cut: cut)
                    #expect(TerminalText.width(fitted) <= width, "\(text) at \(width): \(fitted)")
                    // A wide character that does not fit whole costs a column (one on each side of a middle cut).
                    let least = min(TerminalText.width(text), width - (cut == .middle ? 2 : 1))
                    #expect(TerminalText.width(fitted) >= least, "\(text) at \(width): \(fitted)")
                }
            }
        }
    }

    // MARK: One line

    /// The fields stay whole and the name gives way, in the middle; a line may fill its width exactly (the terminal
    /// layer asks for one column less than the terminal has).
    @Test func aLineAtWidths20To200() {
        #expect(render(Self.iso, 200) == "ubuntu-24.04.1-desktop-amd64-with-a-long-name.iso  1.5 GiB / 6.0 GiB  25%  12.5 MiB/s  ETA 0:06:11")
        #expect(render(Self.iso, 80) == "ubuntu-24.04.1-…a-long-name.iso  1.5 GiB / 6.0 GiB  25%  12.5 MiB/s  ETA 0:06:11")
        #expect(render(Self.iso, 40) == "ubuntu-2…ame.iso  1.5 GiB / 6.0 GiB  25%")
        #expect(render(Self.iso, 20) == "ubuntu-…ame.iso  25%")
        #expect(render(Self.wide, 200) == "日本語のとても長いファイル名-データセット-最終版.tar  300.0 MiB / 1.2 GiB  25%  2.0 MiB/s  ETA 1:06:40")
        #expect(render(Self.wide, 80) == "日本語のとても…ト-最終版.tar  300.0 MiB / 1.2 GiB  25%  2.0 MiB/s  ETA 1:06:40")
        #expect(render(Self.wide, 40) == "日本語…版.tar  300.0 MiB / 1.2 GiB  25%")
        #expect(render(Self.wide, 20) == "日本語…版.tar  25%")
    }

    @Test func withoutANameTheFieldsGoInOrder() {
        var single = Self.iso
        single.name = nil
        #expect(render(single, 80) == "1.5 GiB / 6.0 GiB  25%  12.5 MiB/s  ETA 0:06:11")
        #expect(render(single, 40) == "1.5 GiB / 6.0 GiB  25%  12.5 MiB/s")
        #expect(render(single, 20) == "1.5 GiB  25%")
        #expect(render(single, 5) == "25%")
        #expect(render(ProgressLine.State(bytes: 5_000, bytesPerSecond: 1_000), 80) == "4.9 KiB  1000 B/s", "no total: no percentage")
        #expect(render(ProgressLine.State(name: "a.bin", bytes: nil), 80) == "a.bin  starting")
    }

    @Test func everyLineFitsEveryWidthAndDropsFieldsInOrder() {
        let names: [String?] = [nil, "a.bin", Self.iso.name, Self.wide.name, "\u{1B}[31mred\u{1B}[0m-👨‍👩‍👧-🇯🇵-\u{202E}gpj.exe"]
        let states = names.flatMap { name in
            [Self.iso, Self.wide, ProgressLine.State(bytes: 0, total: 0), ProgressLine.State(bytes: 9 * Self.gib, total: 3),
             ProgressLine.State(bytes: .max, total: .max, bytesPerSecond: .infinity, secondsRemaining: .nan),
             ProgressLine.State(bytes: nil)].map { state in
                var state = state
                state.name = name
                return state
            }
        }
        for state in states {
            for width in Array(0...100) + [200, .max] {
                let line = render(state, width)
                #expect(TerminalText.width(line) <= width, "\(state) at \(width): \(line)")
                #expect(!line.unicodeScalars.contains { $0.value < 0x20 || $0.value == 0x7F || $0.value == 0x202E }, "\(line)")
                // The ETA goes before the speed, the speed before the byte counts.
                if !line.contains("/s") { #expect(!line.contains("ETA"), "\(line)") }
                if state.total != nil, !line.contains(" / "), state.bytes != nil, width >= 8 {
                    #expect(!line.contains("/s"), "\(line)")
                }
            }
        }
        #expect(render(ProgressLine.State(bytes: 9 * Self.gib, total: 3), 80) == "9.0 GiB / 3 B  100%", "held more than the total: 100%")
    }

    // MARK: Several downloads

    @Test func summaryFitsItsWidth() {
        let full = ProgressLine.summary(finished: 3, failed: 1, running: 2, bytesPerSecond: 2_048, width: 80)
        #expect(full == "total: 3 finished, 1 failed, 2 running  2.0 KiB/s")
        #expect(ProgressLine.summary(finished: 3, failed: 1, running: 2, bytesPerSecond: 2_048, width: 45)
                == "3 finished, 1 failed, 2 running  2.0 KiB/s")
        #expect(ProgressLine.summary(finished: 3, failed: 1, running: 2, bytesPerSecond: 2_048, width: 40)
                == "3 finished, 1 failed, 2 running")
        #expect(ProgressLine.summary(finished: 3, failed: 1, running: 2, bytesPerSecond: 2_048, width: 20)
                == "3 finished, 1 faile…")
    }

    @Test func viewFitsTheTerminalsWidthAndHeight() {
        let states = (1...10).map { index in
            ProgressLine.State(name: "file-\(index)-with-a-name-long-enough-to-be-shortened.bin", bytes: Int64(index) << 20,
                               total: 20 << 20, bytesPerSecond: 1_000_000, secondsRemaining: 20)
        }
        let three = ProgressLine.view(Array(states.prefix(3)), summary: "total: 0 finished", width: 79, height: 24)
        #expect(three.count == 4 && three.last == "total: 0 finished")
        let crowded = ProgressLine.view(states, summary: "total: 0 finished", width: 49, height: 6)
        #expect(crowded.count == 5, "at most height - 1 lines: \(crowded)")
        #expect(crowded[3] == "… and 7 more")
        #expect(ProgressLine.view(states, summary: "total", width: 49, height: 3) == ["total"])
        #expect(ProgressLine.view(states, summary: "total", width: 0, height: 24).isEmpty)
        for width in Self.widths {
            for height in [1, 2, 4, 12, 24] {
                let lines = ProgressLine.view(states, summary: String(repeating: "s", count: 300), width: width, height: height)
                #expect(lines.count <= max(height - 1, 1))
                #expect(lines.allSatisfy { TerminalText.width($0) <= width }, "\(lines)")
            }
        }
    }

    private func render(_ state: ProgressLine.State, _ width: Int) -> String {
        ProgressLine.render(state, width: width)
    }
}
