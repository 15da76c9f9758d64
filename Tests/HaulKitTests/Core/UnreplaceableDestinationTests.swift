import Testing
@testable import HaulCore

@Suite("Destinations no download writes to or replaces")
struct UnreplaceableDestinationTests {
    typealias Node = NamedFile.FileType
    static let all: [Node?] = [nil, .regular, .directory, .characterDevice, .nullDevice, .blockDevice, .fifo, .socket, .symbolicLink, .other]

    /// Every combination of what a name is and what it leads to: refused exactly when it is a block device, a
    /// link to a device, FIFO or socket, or a name of one of the process's descriptors; one line naming the path.
    @Test func refusedExactlyForDisksLinksToStreamsAndDescriptorNames() {
        for path in ["/home/me/f.bin", "nul", "/dev/stderr", "/dev/fd/2", "/proc/self/fd/3", "/dev/stdin", "/dev/fdx"] {
            for node in Self.all {
                for target in Self.all {
                    let problem = UnreplaceableDestination.problem(path: path, node: node, target: target)
                    let descriptor = path != "/dev/fdx" && path.hasPrefix("/") && (path.hasPrefix("/dev/") || path.hasPrefix("/proc/"))
                    let linkToStream = node == .symbolicLink && [.characterDevice, .nullDevice, .blockDevice, .fifo, .socket].contains(target)
                    let refused = descriptor || node == .blockDevice || linkToStream
                    #expect((problem != nil) == refused, "\(path) \(String(describing: node)) -> \(String(describing: target)): \(problem ?? "taken")")
                    if let problem { #expect(problem.hasPrefix(path + " ") && !problem.contains("\n"), "\(problem)") }
                }
            }
        }
    }
}
