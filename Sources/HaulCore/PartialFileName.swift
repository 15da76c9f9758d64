/// The names Haul gives a download's bytes until they are complete and verified: `DEST.haul-part`, or
/// `DEST.<uid>.haul-part` when another account's file holds that name in a folder both may write.
package enum PartialFileName {
    /// The suffix of every partial file's name.
    package static let suffix = ".haul-part"

    /// The partial file of `destination` (a path or a name).
    package static func of(_ destination: String) -> String {
        destination + suffix
    }

    /// The partial file of `destination` for the user `uid`, beside another account's file at ``of(_:)``.
    package static func of(_ destination: String, user uid: UInt32) -> String {
        destination + ".\(uid)" + suffix
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
