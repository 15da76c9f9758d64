import Foundation
import HaulKit

/// Downloads the URLs given as arguments with a download session, printing its events.
///
///     swift run SessionExample https://example.com/a.iso https://example.com/b.iso
///
/// Interrupt it and run it again: the session restores its tasks and continues where they stood.
@main
struct SessionExample {
    static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        guard !arguments.isEmpty else {
            print("usage: SessionExample URL...")
            exit(2)
        }
        do {
            var configuration = SessionConfiguration()
            configuration.maxConcurrentDownloads = 2
            configuration.defaultDirectory = FileManager.default.currentDirectoryPath
            let session = try await DownloadSession(identifier: "session-example", configuration: configuration)
            let events = await session.events()
            for argument in arguments {
                let task = try await session.add(DownloadRequest(url: try UserInput.url(argument)))
                print("queued \(task.id) \(task.url) [\(task.state.rawValue)]")
            }
            let printer = Task {
                for await event in events {
                    switch event {
                    case .stateChanged(let id, let from, let to):
                        print("\(id): \(from.rawValue) → \(to.rawValue)")
                    case .finished(let task):
                        print("finished \(task.filePath ?? task.url) (\(task.bytes) bytes)")
                    case .failed(let task):
                        print("failed \(task.url): \(task.error?.message ?? "")")
                    case .allFinished:
                        print("all downloads ended")
                    case .removed(let id):
                        print("\(id) was removed")
                    case .added, .progress:
                        break
                    }
                }
            }
            await session.waitUntilIdle()
            let tasks = try await session.tasks()
            await session.close()
            printer.cancel()
            exit(tasks.allSatisfy { $0.state == .finished } ? 0 : 1)
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }
}
