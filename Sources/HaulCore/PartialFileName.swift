/// The names Haul gives a download's bytes until they are complete and verified: `DEST.haul-part`, or
/// `DEST.<uid>.haul-part` when another account's file holds that name in a folder both may write.
///
/// A destination whose name leaves no room for that ending within a file name's 255 bytes (`-o` takes any name a
/// file system does, as curl's `-o` and wget's `-O` do) has its name shortened in the partial file's: as much of it as
/// fits, cut at a character, then `~` and 16 hex digits of a hash of the whole name, so that the same destination
/// always has the same partial file (a rerun finds its bytes) and two long names that begin alike have two.
package enum PartialFileName {
    /// The suffix of every partial file's name.
    package static let suffix = ".haul-part"

    /// The most bytes a file name may have (`NAME_MAX` on Linux's and macOS's file systems).
    package static let maxNameBytes = 255

    /// The partial file of `destination` (a path or a name).
    package static func of(_ destination: String) -> String {
        fitted(destination, ending: suffix)
    }

    /// The partial file of `destination` for the user `uid`, beside another account's file at ``of(_:)``.
    package static func of(_ destination: String, user uid: UInt32) -> String {
        fitted(destination, ending: ".\(uid)" + suffix)
    }

    /// `destination` with `ending` added to its last component, that component shortened (see the type's doc) when
    /// the two would pass ``maxNameBytes``.
    static func fitted(_ destination: String, ending: String) -> String {
        // The last component's length without splitting the path: this runs several times for every file.
        let utf8 = destination.utf8
        let start = utf8.lastIndex(of: UInt8(ascii: "/")).map { utf8.index(after: $0) } ?? utf8.startIndex
        guard utf8.distance(from: start, to: utf8.endIndex) + ending.utf8.count > maxNameBytes else { return destination + ending }
        let name = destination[start...], folder = destination[..<start]
        let mark = "~" + hexString(withUnsafeBytes(of: fnv1a(name.utf8).bigEndian, Array.init))
        var kept = ""
        for character in name {
            if kept.utf8.count + character.utf8.count + mark.utf8.count + ending.utf8.count > maxNameBytes { break }
            kept.append(character)
        }
        return folder + kept + mark + ending
    }

    /// FNV-1a, 64 bits: the same on every machine and in every build (Swift's `Hasher` is seeded per process).
    private static func fnv1a(_ bytes: some Sequence<UInt8>) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01b3
        }
        return hash
    }

    /// Whether `name` (a path's last component) is a partial file's name, whatever its letters' case: a file a
    /// person or server names so would be taken for a download's unfinished bytes.
    package static func isPartial(_ name: String) -> Bool {
        name.lowercased().hasSuffix(suffix)
    }

    /// Why `path`, given as a destination, is refused: its name is a partial file's.
    package static func refusal(destination path: String) -> String {
        "\(path) ends in \(suffix), the name Haul gives a download until it is complete; choose another name"
    }

    /// What is said of a file found at the partial file's name `partialPath` that no download of this URL knows.
    package static func unknownFile(_ partialPath: String) -> String {
        "\(partialPath) is already there, and no download of this URL in this HAUL_HOME knows it (another download's unfinished file, or a file of yours)"
    }
}
