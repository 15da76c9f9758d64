import Foundation
import HaulKit

/// The dashboard's secrets: random tokens and the API key file. None of them is ever logged or put in a page.
package enum WebSecrets {
    /// 32 random bytes from the system's secure generator, as 64 lower-case hex digits.
    package static func token() -> String {
        var generator = SystemRandomNumberGenerator()
        var text = ""
        text.reserveCapacity(64)
        for _ in 0..<4 {
            let word = generator.next() as UInt64
            let hex = String(word, radix: 16)
            text += String(repeating: "0", count: 16 - hex.count) + hex
        }
        return text
    }

    /// `$HAUL_HOME/web/api-key`.
    package static func apiKeyPath(home: HaulHome) -> String { home.path + "/web/api-key" }

    /// The API key, if one was created.
    package static func apiKey(home: HaulHome) -> String? {
        // Haul's own file in its private home: never through a link, never a FIFO, never large.
        guard let data = try? NamedFileReader.readNow(apiKeyPath(home: home), as: .apiKey).bytes else { return nil }
        let key = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        return key.count >= 32 ? key : nil
    }

    /// The API key, created on first use (folder 0700, file 0600).
    package static func apiKeyCreatingIfNeeded(home: HaulHome) throws -> String {
        if let key = apiKey(home: home) { return key }
        try home.prepare()
        let folder = home.path + "/web"
        try POSIX.makePrivateDirectories(folder, root: home.path)
        let key = token()
        let path = apiKeyPath(home: home)
        let temporary = path + ".tmp"
        guard FileManager.default.createFile(atPath: temporary, contents: Data((key + "\n").utf8), attributes: [.posixPermissions: 0o600]) else {
            throw POSIX.error("writing", temporary)
        }
        // Another `haul web --api-key` may have made one meanwhile: the first one stays.
        if link(temporary, path) != 0 {
            unlink(temporary)
            if let existing = apiKey(home: home) { return existing }
            throw POSIX.error("writing", path)
        }
        unlink(temporary)
        return key
    }
}
