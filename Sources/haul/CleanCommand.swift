import ArgumentParser
import Foundation
import HaulKit

/// `haul clean`: removes what finished downloads left in `HAUL_HOME`.
struct CleanCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "clean",
        abstract: "Remove what finished downloads left in HAUL_HOME: their resume records, stale locks and finished batch sessions.",
        discussion: """
            Never touches a running download, nor the resume record of an interrupted one whose partial file is \
            still there (run its command again to resume it). The daemon's sessions are left alone: `haul rm` \
            removes their tasks. After a finished download's record is gone, getting the same file again \
            downloads it anew (or, with -o, says the file exists).
            """)

    @Flag(name: .customLong("dry-run"), help: "List what would be removed, and remove nothing.")
    var dryRun = false

    func run() async throws {
        let home = HaulHome(environment: ProcessInfo.processInfo.environment)
        let cleaner = HomeCleaner(home: home)
        let plan = HomeCleanup.plan(cleaner.inventory())
        var removed: [HomeCleanup.Removal] = []
        var left = 0
        for removal in plan.removals {
            if dryRun {
                print("would remove \(Self.describe(removal, cleaner))")
                removed.append(removal)
            } else if cleaner.remove(removal) {
                print("removed \(Self.describe(removal, cleaner))")
                removed.append(removal)
            } else {
                left += 1
            }
        }
        print(Self.summary(removed, plan: plan, left: left, dryRun: dryRun))
    }

    static func describe(_ removal: HomeCleanup.Removal, _ cleaner: HomeCleaner) -> String {
        let path = cleaner.relativePath(removal)
        switch removal {
        case .finishedRecord(_, let destination):
            return "the resume record of \(destination ?? path) (finished)"
        case .staleRecord(_, let destination):
            return "the resume record of \(destination ?? path) (its partial file is gone)"
        case .lock: return "the stale lock \(path)"
        case .temporary: return "the leftover \(path)"
        case .session: return "the finished batch session \(path)"
        }
    }

    /// One line: what was removed, by kind, and what was kept.
    static func summary(_ removed: [HomeCleanup.Removal], plan: HomeCleanup.Plan, left: Int, dryRun: Bool) -> String {
        func count(_ n: Int, _ one: String, _ many: String) -> String? { n == 0 ? nil : "\(n) \(n == 1 ? one : many)" }
        var records = 0, locks = 0, temporaries = 0, sessions = 0
        for removal in removed {
            switch removal {
            case .finishedRecord, .staleRecord: records += 1
            case .lock: locks += 1
            case .temporary: temporaries += 1
            case .session: sessions += 1
            }
        }
        let parts = [
            count(records, "resume record", "resume records"), count(locks, "lock file", "lock files"),
            count(temporaries, "temporary file", "temporary files"), count(sessions, "batch session", "batch sessions"),
        ].compactMap { $0 }
        var line = parts.isEmpty ? "nothing to remove" : (dryRun ? "would remove " : "removed ") + parts.joined(separator: ", ")
        let kept = [
            count(plan.keptRecords, "resume record of an unfinished or running download", "resume records of unfinished or running downloads"),
            count(plan.keptSessions, "batch session with unfinished tasks", "batch sessions with unfinished tasks"),
            count(left, "item that came into use meanwhile", "items that came into use meanwhile"),
        ].compactMap { $0 }
        if !kept.isEmpty { line += "; kept " + kept.joined(separator: ", ") }
        return "haul clean: " + line
    }
}
