import Foundation

extension TransferEngine {
    /// Throws when `path` is a destination no download writes to or replaces (``UnreplaceableDestination``).
    static func refuseUnreplaceable(_ path: String) throws(HaulError) {
        var info = stat()
        let node = lstat(path, &info) == 0 ? NamedFileReader.fileType(info) : nil
        var target: NamedFile.FileType?
        if node == .symbolicLink, stat(path, &info) == 0 { target = NamedFileReader.fileType(info) }
        if let problem = UnreplaceableDestination.problem(path: path, node: node, target: target) {
            throw HaulError(.usage, problem)
        }
    }
}
