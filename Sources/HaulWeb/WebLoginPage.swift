import Crypto
import Foundation
import HaulKit

/// `haul web --open`'s login page: a private HTML file (0600, in the 0700 folder `$HAUL_HOME/web/open`) that sends
/// the browser on to the one-time login link. The browser is started on the file's `file://` address, so the link
/// never travels on a command line, which every local user can read (`/proc/PID/cmdline`, `ps`) and race to spend
/// first. Jupyter opens its browser the same way, for the same reason.
///
/// The file is named from a digest of the link's token, so the name a command line shows tells nothing of it, and the
/// dashboard, which knows the token, removes the file when the token is spent, or once it has expired
/// (``WebDashboard``); `haul web --open` also removes those left older than a token's lifetime (a daemon that stopped).
package enum WebLoginPage {
    /// `$HAUL_HOME/web/open`.
    package static func folder(home: HaulHome) -> String { home.path + "/web/open" }

    /// The file's name for a login token: a digest of it, never the token.
    package static func fileName(token: String) -> String {
        "login-" + hexString(SHA256.hash(data: Array(token.utf8))).prefix(32) + ".html"
    }

    /// The token of a login link (`…/login?token=T`), if it has one.
    package static func token(ofLink link: String) -> String? {
        guard let components = URLComponents(string: link), components.path.hasSuffix("/login") else { return nil }
        return components.queryItems?.first { $0.name == "token" }?.value.flatMap { $0.isEmpty ? nil : $0 }
    }

    /// The page: an immediate refresh to `link` (which a browser follows from a local file), and the link itself.
    package static func html(link: String) -> String {
        let escaped = link.reduce(into: "") { text, character in
            switch character {
            case "&": text += "&amp;"
            case "<": text += "&lt;"
            case ">": text += "&gt;"
            case "\"": text += "&quot;"
            case "'": text += "&#39;"
            default: text.append(character)
            }
        }
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">
            <meta http-equiv="refresh" content="0;url=\(escaped)"><title>Haul</title></head>
            <body><p><a href="\(escaped)">Open the Haul dashboard</a> (this page logs in once, then is removed).</p></body></html>

            """
    }

    /// Which of the files in the folder (names and modification times) are past a token's lifetime at `now`.
    package static func stale(_ files: [(name: String, modified: Date)], now: Date) -> [String] {
        let lifetime = Double(WebLogins.tokenLifetime.components.seconds)
        return files.filter { $0.name.hasPrefix("login-") && $0.name.hasSuffix(".html") && now.timeIntervalSince($0.modified) >= lifetime }
            .map(\.name)
    }

    /// Writes the page for `link` (0600, in the 0700 folder, never through a link left there) and returns its path;
    /// removes the stale pages first.
    package static func save(link: String, home: HaulHome) throws -> String {
        guard let token = token(ofLink: link) else { throw HaulError(.server, "the daemon's login link has no token; update haul and restart the daemon") }
        try home.prepare()
        let folder = folder(home: home)
        try POSIX.makePrivateDirectories(folder, root: home.path)
        sweep(home: home, now: Date())
        let path = folder + "/" + fileName(token: token)
        unlink(path)
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIX.error("writing", path) }
        defer { close(descriptor) }
        let bytes = Array(html(link: link).utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else {
            unlink(path)
            throw POSIX.error("writing", path)
        }
        return path
    }

    /// Removes the page of `token`, if there is one.
    package static func remove(token: String, home: HaulHome) {
        unlink(folder(home: home) + "/" + fileName(token: token))
    }

    /// Removes the pages past a token's lifetime.
    package static func sweep(home: HaulHome, now: Date) {
        let folder = folder(home: home)
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        let files = names.compactMap { name -> (name: String, modified: Date)? in
            guard let modified = (try? FileManager.default.attributesOfItem(atPath: folder + "/" + name))?[.modificationDate] as? Date else { return nil }
            return (name, modified)
        }
        for name in stale(files, now: now) { unlink(folder + "/" + name) }
    }
}
