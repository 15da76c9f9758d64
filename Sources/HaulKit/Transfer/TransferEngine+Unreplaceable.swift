import Foundation

extension TransferEngine {
    /// Throws when `path` is a destination no download writes to or replaces (``UnreplaceableDestination``).
    static func refuseUnreplaceable(_ path: String) throws(HaulError) {
        var info = stat()
        let node = lstat(path, &info) == 0 ? Self.node(info) : nil
        var target: UnreplaceableDestination.Node?
        if node == .symbolicLink, stat(path, &info) == 0 { target = Self.node(info) }
        if let problem = UnreplaceableDestination.problem(path: path, node: node, target: target) {
            throw HaulError(.usage, problem)
        }
    }

    private static func node(_ info: stat) -> UnreplaceableDestination.Node {
        switch info.st_mode & S_IFMT {
        case S_IFREG: return .regular
        case S_IFDIR: return .directory
        case S_IFCHR: return .characterDevice
        case S_IFBLK: return .blockDevice
        case S_IFIFO: return .fifo
        case S_IFSOCK: return .socket
        case S_IFLNK: return .symbolicLink
        default: return .other
        }
    }
}
