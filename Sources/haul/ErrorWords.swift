import Foundation
import HaulKit

extension HaulError {
    /// The line a person reads: the library's message, then the next step in `haul`'s own flags when the reason
    /// has one (the library does not know which front end it serves).
    var line: String {
        guard let hint = Self.hint(for: reason, again: .sameCommand) else { return message }
        return message + "; " + hint
    }

    /// The line for a failure of the daemon's task `id`: its next step is `haul resume ID`, not running the command
    /// that queued it again (which would add nothing: the task exists).
    func line(task id: String) -> String {
        guard let hint = Self.hint(for: reason, again: .resumeTask(id)) else { return message }
        return message + "; " + hint
    }

    /// How a download is taken up again: by the same `haul get`, or by resuming a daemon's task.
    enum Again {
        case sameCommand
        case resumeTask(String)

        /// The step, after `then` or on its own.
        var step: String {
            switch self {
            case .sameCommand: return "run the same command again"
            case .resumeTask(let id): return "haul resume \(id)"
            }
        }
    }

    /// The next step for `reason`, in this command line's terms; `again` is how the download is taken up again.
    static func hint(for reason: FailureReason, again: Again = .sameCommand) -> String? {
        switch reason.which {
        case .interrupted, .retriesExhausted, .endsAtSamePlace:
            return again.step + " to resume"
        case .unreachable:
            return "check the URL and the network, then " + again.step
        case .noSpace:
            return "free some space, then " + again.step + " to resume"
        case .httpStatus(401, _):
            return "it needs a user and password it accepts: give them with -u USER:PASSWORD, or --netrc to take them from ~/.netrc (if you did, check them)"
        case .unauthorizedAfterRedirect(let url, _):
            // Not "check them": they were never sent. Nor curl's --location-trusted, which haul does not take; nor -u
            // with that URL, which would fetch what it answers there (a login page), not the file.
            let host = URL(string: url)?.host ?? "HOST"
            return "if that server has a login of its own, put it in a netrc file as \"machine \(host) login USER password PASSWORD\" and add --netrc-file FILE (or --netrc for ~/.netrc): each host a redirect leads to gets its own entry"
        case .unauthorizedThroughProxy:
            // Never -u for the proxy's own login: -u goes to the server.
            return "check the user and password in --proxy (or in the proxy variable); only if the server itself asks for a login, give it with -u USER:PASSWORD"
        case .httpStatus(let status, _) where (400..<500).contains(status):
            return "check the URL and any headers it needs"
        case .destinationExists:
            return "use --overwrite to replace it, or --continue to resume it"
        case .destinationNotAFile:
            // Not --continue: Haul continues only a regular file of its own, never through a link.
            return "use --overwrite to replace it (a link itself is replaced, never what it leads to), or choose another name with -o"
        case .appearedWhileDownloading(let path, _):
            // Neither --continue (there is nothing of the other file to resume) nor --overwrite (it was not there to
            // be chosen): the download is complete, and waits for the name.
            return "move \(path) away, then " + again.step + " to put the download in its place"
        case .unfinishedBesideExisting(let path, _):
            // Not --continue: the download is this URL's own already; what it lacks is leave to replace the file.
            switch again {
            case .sameCommand: return "add --overwrite to finish it in that file's place, or move \(path) away and run the same command again"
            case .resumeTask: return "move \(path) away, then " + again.step
            }
        case .unknownPartialFile(let partialPath):
            return "move \(partialPath) away (or remove it if nothing needs it), then " + again.step
        case .destinationIsDirectory(let path):
            return "use --dir \(path) to save into it"
        case .partialOfAnotherURL:
            return "use --overwrite to discard it and download this URL, or choose another -o path"
        case .longerThanServerFile:
            // Not --overwrite: the file is someone's, and no download of this URL ever held it.
            return "remove it, or choose another name with -o"
        case .differsFromServer, .cannotVerifyWithoutRanges:
            return "use --overwrite to download it again"
        case .checksumMismatch(_, _, _, let alreadyAtPath):
            return alreadyAtPath ? "use --overwrite to download it again" : nil
        case .proxyAuthenticationRequired(let proxy?):
            // In the form of the proxy used (a SOCKS5 user is not helped by an http:// example first).
            return "give them in the proxy's URL: --proxy " + ErrorWords.withCredentials(proxy) + " (or in the proxy variable)"
        case .proxyAuthenticationRequired(nil):
            return "give them in the proxy's URL: --proxy http://user:password@host:port (or socks5://user:password@host:port)"
        case .proxyCredentialsRefused:
            return "check the user and password in --proxy (or in the proxy variable)"
        case .proxyRefused:
            return "ask the proxy's administrator, or reach the server without it (--noproxy HOST)"
        case .unusableTLSFiles:
            return "check --cacert, --capath, --cert and --key"
        case .untrustedCertificate:
            // The CA that signed the server's certificate, not that certificate itself: curl also accepts the
            // server's own (OpenSSL's partial chains), which BoringSSL through NIOSSL does not offer.
            return "trust the CA that signed it with --cacert FILE (or SSL_CERT_FILE); the server's own certificate there is not enough"
        case .insecureRedirect:
            return "pass --allow-insecure-redirects to allow it"
        case .tooManyRedirects:
            return "raise the limit with --max-redirs N (wget's --max-redirect N) if the redirects are meant"
        case .daemonNotRunning:
            return "start one with `haul daemon`, or drop --no-autostart"
        case .unusableSocketPath:
            return "choose another path with --socket (or HAUL_SOCKET)"
        case .replacedWhileDownloading:
            return again.step + " to download it afresh"
        case .listedThroughLink:
            return "name the folder it leads to with --dir, or change the list's dir= or out="
        case .httpStatus, .busy, .impossibleLength, .untrustedFolder, .outputClosed, .other:
            return nil
        }
    }
}

/// Pieces of the lines above.
enum ErrorWords {
    /// `scheme://host:port` with `user:password@` where a user and password go: `socks5://user:password@host:1080`.
    static func withCredentials(_ proxy: String) -> String {
        guard let range = proxy.range(of: "://") else { return "user:password@" + proxy }
        return proxy[..<range.upperBound] + "user:password@" + proxy[range.upperBound...]
    }
}

extension InputError {
    /// The line a person reads (an input error already says what to change).
    var line: String { message }
}
