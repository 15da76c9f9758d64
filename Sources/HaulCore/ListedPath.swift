/// The rules a URL list's `dir=` and `out=` values follow, checked as the list is read. The list is data that may
/// come from elsewhere (a page, a mail, a generator); the command line, not the list, says where files may go:
///
/// - nothing outside the folder the command saves to (`--dir`, else the current one): no absolute path, no `..`;
/// - no hidden file or folder (a part that starts with `.`): `out=.ssh/authorized_keys`, `dir=.config/autostart`
///   would otherwise be written from a home folder. The names a server chooses lose their leading dot for the same
///   reason (``FileNaming``); `-o` and `--dir`, which the user typed, name any path;
/// - `out=` names a file: no part that is `.` or empty, and no trailing `/` (`out=.` or `out=sub/.` would save the
///   file as the folder's own name).
///
/// The folders these name below the command's folder are also entered without following a symbolic link when the
/// file is saved (``DownloadSpec/confinedTo``): a link there would lead anywhere.
public enum ListedPath {
    /// Why a list's `dir=` value is refused; `nil` when it is taken.
    public static func refusal(directory value: String) -> String? {
        if leavesFolder(value) {
            return "dir=\(value) leaves the folder; a list's dir= names a folder inside the one haul saves to: give that with --dir (e.g. --dir \(value.hasPrefix("/") ? value : "FOLDER") and leave dir= out)"
        }
        if let hidden = hiddenPart(of: value) {
            return "dir=\(value) names a hidden folder (\(hidden)), which a URL list may not: rename it in the list, or give the folder on the command line with --dir"
        }
        return nil
    }

    /// Why a list's `out=` value is refused; `nil` when it is taken.
    public static func refusal(output value: String) -> String? {
        if leavesFolder(value) {
            return "out=\(value) leaves the folder; out= names a file in it (dir= a folder inside it)"
        }
        let parts = value.split(separator: "/", omittingEmptySubsequences: false)
        if value.hasSuffix("/") {
            let folder = String(value.dropLast())
            return "out=\(value) names a folder; save into it with dir=\(folder.isEmpty ? "/" : folder), or name the file: out=\(value)NAME"
        }
        if parts.last == "." {
            let folder = parts.dropLast().joined(separator: "/")
            return "out=\(value) names a folder, not a file in it; name the file: out=\(folder.isEmpty ? "" : folder + "/")NAME"
        }
        if parts.contains(where: { $0.isEmpty || $0 == "." }) {
            let plain = parts.filter { !$0.isEmpty && $0 != "." }.joined(separator: "/")
            return "out=\(value) has an empty or \".\" part; write it as out=\(plain)"
        }
        if let hidden = hiddenPart(of: value) {
            let what = parts.last.map(String.init) == hidden ? "file" : "folder"
            return "out=\(value) names a hidden \(what) (\(hidden)), which a URL list may not: rename it in the list, or save that URL on its own with -o"
        }
        return nil
    }

    /// Whether a value reaches outside the command's folder: absolute, or through `..`.
    public static func leavesFolder(_ value: String) -> Bool {
        value.hasPrefix("/") || value.split(separator: "/", omittingEmptySubsequences: false).contains("..")
    }

    /// The first part of `value` that names a hidden file or folder (starts with `.`, other than `.` itself).
    static func hiddenPart(of value: String) -> String? {
        value.split(separator: "/").first { $0.hasPrefix(".") && $0 != "." && $0 != ".." }.map(String.init)
    }

    /// The parts of `path` below `root`, both written the same way (absolute or both relative to one folder);
    /// `nil` when `path` is not `root` or below it, or when a part below it is `..`. `.` and empty parts are
    /// skipped.
    public static func parts(of path: String, below root: String) -> [String]? {
        func split(_ text: String) -> [Substring] { text.split(separator: "/").filter { $0 != "." } }
        guard path.hasPrefix("/") == root.hasPrefix("/") else { return nil }
        let top = split(root), all = split(path)
        guard all.count >= top.count, Array(all.prefix(top.count)) == top else { return nil }
        let below = all.dropFirst(top.count)
        guard !below.contains("..") else { return nil }
        return below.map(String.init)
    }
}
