import Foundation

/// Choosing a safe local file name for a download saved into a folder.
package enum FileNaming {
    /// The longest name Haul picks, in UTF-8 bytes, leaving room for ` (N)` and the partial-file suffix.
    public static let maxNameBytes = 200
    public static let fallbackName = "download"

    /// The name to save under: `Content-Disposition` (`filename*`, then `filename`), else the last path
    /// segment of the final URL, percent-decoded, else `download`; always sanitized.
    public static func suggestedName(contentDisposition: String?, url: URL) -> String {
        if let header = contentDisposition, let name = ContentDisposition(header)?.filename, let safe = sanitize(name) {
            return safe
        }
        let path = url.path
        if let last = path.split(separator: "/").last, let decoded = String(last).removingPercentEncoding ?? Optional(String(last)),
           let safe = sanitize(decoded) {
            return safe
        }
        return fallbackName
    }

    /// A name that is one plain file name: no path separators, no control or bidi characters, no leading
    /// dots (no hidden files, no `..`), no trailing dots or spaces, at most `maxNameBytes`. `nil` if nothing is left.
    public static func sanitize(_ raw: String) -> String? {
        var scalars = String.UnicodeScalarView()
        for scalar in raw.unicodeScalars {
            switch scalar.value {
            case 0x00...0x1F, 0x7F...0x9F, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069:
                continue
            case 0x2F, 0x5C: // "/" and "\"
                scalars.append("_")
            default:
                scalars.append(scalar)
            }
        }
        var name = String(scalars)
        name = String(name.drop(while: { $0 == "." || $0 == " " }))
        while let last = name.last, last == "." || last == " " { name.removeLast() }
        // Never the name of a partial file (`x.bin.haul-part`): a server must not name a download after one.
        if PartialFileName.isPartial(name) { name = String(name.dropLast(PartialFileName.suffix.count)) + "_haul-part" }
        name = truncate(name, toBytes: maxNameBytes)
        return name.isEmpty ? nil : name
    }

    /// `name`, or `name (1).ext`, `name (2).ext`, … : the first that `isTaken` rejects; `nil` after `limit` tries.
    public static func freeName(for name: String, limit: Int = 10_000, isTaken: (String) -> Bool) -> String? {
        if !isTaken(name) { return name }
        let (stem, ext) = splitExtension(name)
        for number in 1...limit {
            let candidate = "\(stem) (\(number))\(ext)"
            if !isTaken(candidate) { return candidate }
        }
        return nil
    }

    /// Splits `archive.tar.gz` into (`archive`, `.tar.gz`) and `report.pdf` into (`report`, `.pdf`).
    static func splitExtension(_ name: String) -> (stem: String, ext: String) {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count > 1 else { return (name, "") }
        var extCount = 1
        if parts.count > 2, parts[parts.count - 2].lowercased() == "tar" { extCount = 2 }
        let ext = parts.suffix(extCount).joined(separator: ".")
        guard ext.utf8.count <= 16, !ext.isEmpty else { return (name, "") }
        return (parts.dropLast(extCount).joined(separator: "."), "." + ext)
    }

    /// Cuts `name` to at most `limit` UTF-8 bytes on a character boundary, keeping a short extension.
    static func truncate(_ name: String, toBytes limit: Int) -> String {
        guard name.utf8.count > limit else { return name }
        let (stem, ext) = splitExtension(name)
        let room = limit - ext.utf8.count
        var kept = ""
        for character in stem {
            if kept.utf8.count + character.utf8.count > room { break }
            kept.append(character)
        }
        return kept + ext
    }
}
