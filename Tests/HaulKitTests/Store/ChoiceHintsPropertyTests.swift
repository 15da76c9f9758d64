import Foundation
import PropertyBased
import Testing
@testable import HaulCore
@testable import HaulKit

/// A `--dir` task's remembered name is read in its start's transaction and handed to its download's first look
/// (``ChoiceHints``): whatever starts, conclusions, saves and changes of names come in whatever order, a look at a
/// name always gives what the store holds at that moment.
@Suite struct ChoiceHintsPropertyTests {
    @Test func aLookAtAChosenNameAlwaysGivesWhatTheStoreHolds() async throws {
        await propertyCheck(input: Gen.int(in: 0...599).array(of: 1...60)) { operations in
            let sandbox = StoreSandbox()
            let store = try #require(try? TaskStore(path: sandbox.storePath))
            let tasks = (0..<3).map { sandbox.newTask($0, id: "t\($0)") }
            #expect((try? store.add(tasks))?.count == 3)
            let keys = tasks.map { task -> String in
                guard case .directory(let folder)? = task.spec.destination else { return "" }
                return TransferRecord.directoryKey(url: task.spec.url, directory: folder)
            }
            var model: [String: String] = [:]
            for operation in operations {
                let index = operation % 3, key = keys[index], argument = operation / 3
                switch argument % 6 {
                case 0:    // the task is queued again and started (its name read in the start's transaction)
                    _ = try? store.update(id: "t\(index)") { $0.state = .waiting }
                    let started = try? store.startIfWaiting(id: "t\(index)")
                    #expect(started?.started == true)
                case 1:    // another task ends and this one takes its slot, in one transaction
                    _ = try? store.update(id: "t\(index)") { $0.state = .waiting }
                    let other = "t\((index + 1) % 3)"
                    let both = try? store.conclude(
                        id: other, lease: nil, journaling: nil, payload: { _ in "" }, finalRecord: nil, thenStarting: "t\(index)",
                        { $0.state = .finished })
                    #expect(both?.next?.started == true && both?.concluded?.task.state == .finished)
                case 2:    // its download chooses a name (with its first record)
                    let path = sandbox.root + "/downloads/\(argument).bin"
                    try? store.save(StoredRecord(key: "r\(argument)", value: "{}"), choice: StoredRecord(key: key, value: path), fence: nil)
                    model[key] = path
                case 3:    // its download chooses afresh or forgets its name
                    let path = argument % 2 == 0 ? sandbox.root + "/downloads/x\(argument).bin" : nil
                    try? store.setChoice(key: key, path: path)
                    model[key] = path
                default:    // its download looks (once or twice)
                    #expect((try? store.choice(key: key)) == model[key], "key of t\(index)")
                }
            }
            for key in keys { #expect((try? store.choice(key: key)) == model[key]) }
        }
    }
}
