/// Destinations a download neither writes to nor replaces, whatever its flags (`--overwrite` included): decided
/// from what the name is (`lstat`) and, for a link, what it leads to (`stat`), in ``NamedFile/FileType``'s words.
///
/// A device, FIFO or socket named itself is written as a stream (`-o /dev/null`, a FIFO a reader waits on); a
/// regular file is refused, replaced or resumed by the flags. What is left is refused here:
/// - a name of one of the process's own descriptors other than standard output (`/dev/stderr`, `/dev/fd/N`,
///   `/proc/self/fd/N`): a link the system keeps, which `--overwrite` would replace by a file for every program;
/// - a block device: a disk, never written over;
/// - a link to a device, FIFO or socket: Haul never writes through a link, and replacing it (`nul -> /dev/null`
///   made a regular file) is not what anyone means by it.
package enum UnreplaceableDestination {
    /// Why `path` is refused as a file destination, or `nil`. `node` is what the name itself is (`nil`: nothing
    /// there), `target` what a link leads to (`nil`: not a link, or a link to nothing).
    package static func problem(path: String, node: NamedFile.FileType?, target: NamedFile.FileType?) -> String? {
        if isDescriptorName(path) {
            return "\(path) names one of haul's own descriptors; haul writes a download to a file or to standard output (-o -): for standard error, give -o - and redirect (1>&2)"
        }
        switch node {
        case .blockDevice:
            return "\(path) is a block device; haul writes a download to a file (or to a FIFO, socket or character device), never over a disk: choose another -o"
        case .symbolicLink:
            guard let what = target.flatMap(describe) else { return nil }
            return "\(path) is a link to \(what); haul neither writes through a link nor replaces one: give what it leads to as -o itself, or another name"
        default:
            return nil
        }
    }

    /// Whether `path` is a system name of one of this process's descriptors (standard output's are taken as
    /// `-o -` before this is asked).
    package static func isDescriptorName(_ path: String) -> Bool {
        path == "/dev/stderr" || path == "/dev/stdin" || path.hasPrefix("/dev/fd/") || path.hasPrefix("/proc/self/fd/")
            || path.hasPrefix("/proc/thread-self/fd/")
    }

    /// A link target that is refused, in words; `nil` for one that is not (a file, a folder: refused elsewhere).
    private static func describe(_ target: NamedFile.FileType) -> String? {
        switch target {
        case .characterDevice, .nullDevice, .blockDevice: return "a device"
        case .fifo: return "a FIFO"
        case .socket: return "a socket"
        case .regular, .directory, .symbolicLink, .other: return nil
        }
    }
}
