#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Which file a name leads to, over time: its inode number, and its birth time where the file system keeps one. An
/// inode number alone comes back: a file deleted and another created at its name often gets the same number at once,
/// and only the birth time tells the two apart (ext4, XFS, Btrfs, tmpfs; APFS on Apple's systems). The device is left
/// out: the same file on shared storage has another device number on each machine of a fleet (NFS keeps inode
/// numbers), and a record names a file at one path, in one folder.
enum FileIdentity {
    /// The identity of the file `info` describes (already read): `name` in the folder open as `folder` (not
    /// following a link), or the open file `folder` itself when `name` is `nil`. Only the birth time is read anew,
    /// where `stat` does not carry it (Linux).
    static func of(_ info: stat, at folder: Int32, _ name: String?) -> String {
        let base = "\(UInt64(info.st_ino))"
        #if canImport(Darwin)
        return base + ":\(info.st_birthtimespec.tv_sec).\(info.st_birthtimespec.tv_nsec)"
        #elseif os(Linux)
        return birthTime(folder, name).map { base + ":" + $0 } ?? base
        #else
        return base
        #endif
    }

    #if os(Linux)
    /// `statx(2)`, found at run time: Swift's Glibc module does not import it (glibc has it since 2.28; Musl since
    /// 1.2.5). Without it an identity is the inode number alone.
    private typealias Statx = @convention(c) (Int32, UnsafePointer<CChar>, Int32, UInt32, UnsafeMutableRawPointer) -> Int32
    private static let statx: Statx? = {
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "statx") else { return nil }
        return unsafeBitCast(symbol, to: Statx.self)
    }()

    /// `SEC.NSEC` of the file's birth, when the file system reports it.
    private static func birthTime(_ folder: Int32, _ name: String?) -> String? {
        guard let statx else { return nil }
        // struct statx (linux/stat.h): 256 bytes, `stx_mask` at 0, `stx_btime` (i64 seconds, u32 nanoseconds) at 80.
        let buffer = UnsafeMutableRawPointer.allocate(byteCount: 256, alignment: 8)
        defer { buffer.deallocate() }
        buffer.initializeMemory(as: UInt8.self, repeating: 0, count: 256)
        let birthMask: UInt32 = 0x800  // STATX_BTIME
        let emptyPath: Int32 = 0x1000  // AT_EMPTY_PATH: the descriptor itself
        let flags = name == nil ? emptyPath : Int32(AT_SYMLINK_NOFOLLOW)
        guard statx(folder, name ?? "", flags, birthMask, buffer) == 0,
              buffer.load(fromByteOffset: 0, as: UInt32.self) & birthMask != 0 else { return nil }
        return "\(buffer.load(fromByteOffset: 80, as: Int64.self)).\(buffer.load(fromByteOffset: 88, as: UInt32.self))"
    }
    #endif
}
