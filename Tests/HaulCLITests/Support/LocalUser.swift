import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A second account on this machine, made with `useradd` for one test and removed with `userdel` afterwards
/// (also when the test fails): what another local user can do to Haul is tested as that user, not imagined.
struct LocalUser: Sendable {
    let name: String
    let uid: uid_t
    let gid: gid_t

    /// Whether accounts can be made here: root, with useradd, userdel and runuser.
    static var available: Bool {
        getuid() == 0 && ["/usr/sbin/useradd", "/usr/sbin/userdel", "/usr/sbin/runuser"].allSatisfy {
            FileManager.default.isExecutableFile(atPath: $0)
        }
    }

    /// Runs `body` with a new user (no home folder, no login shell), removed when `body` ends.
    static func with<T>(_ body: (LocalUser) async throws -> T) async throws -> T {
        guard available else { throw HarnessError("making a second user needs root, useradd, userdel and runuser") }
        let name = "haul" + String(UUID().uuidString.prefix(8)).lowercased()
        _ = try runTool("/usr/sbin/useradd", ["-M", "-s", "/usr/sbin/nologin", "-U", name], in: "/")
        defer { _ = try? runTool("/usr/sbin/userdel", [name], in: "/") }
        guard let entry = getpwnam(name) else { throw HarnessError("useradd made no user \(name)") }
        return try await body(LocalUser(name: name, uid: entry.pointee.pw_uid, gid: entry.pointee.pw_gid))
    }

    /// Runs `/bin/sh -c SCRIPT` as this user; its output, or an error naming the exit status.
    @discardableResult
    func shell(_ script: String) throws -> String {
        try runTool("/usr/sbin/runuser", ["-u", name, "--", "/bin/sh", "-c", script], in: "/")
    }

    /// Gives `path` to this user.
    func own(_ path: String) {
        _ = chown(path, uid, gid)
    }
}
