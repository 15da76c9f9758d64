import HaulKit

extension HaulError {
    /// The line a person reads: the library's message, then the next step in `haul`'s own flags when the reason
    /// has one (the library does not know which front end it serves).
    var line: String {
        guard let hint = Self.hint(for: reason) else { return message }
        return message + "; " + hint
    }

    /// The next step for `reason`, in this command line's terms.
    static func hint(for reason: FailureReason) -> String? {
        switch reason {
        case .destinationExists:
            return "use --overwrite to replace it, or --continue to resume it"
        case .destinationIsDirectory(let path):
            return "use --dir \(path) to save into it"
        case .partialOfAnotherURL:
            return "use --overwrite to discard it and download this URL, or choose another -o path"
        case .differsFromServer, .cannotVerifyWithoutRanges:
            return "use --overwrite to download it again"
        case .checksumMismatch(_, _, _, let alreadyAtPath):
            return alreadyAtPath ? "use --overwrite to download it again" : nil
        case .proxyAuthenticationRequired:
            return "give them as --proxy http://user:password@host:port"
        case .unusableTLSFiles:
            return "check --cacert, --capath, --cert and --key"
        case .untrustedCertificate:
            return "trust its CA with --cacert FILE (or SSL_CERT_FILE)"
        case .insecureRedirect:
            return "pass --allow-insecure-redirects to allow it"
        case .daemonNotRunning:
            return "start one with `haul daemon`, or drop --no-autostart"
        case .unusableSocketPath:
            return "choose another --socket"
        case .httpStatus, .busy, .retriesExhausted, .interrupted, .impossibleLength, .replacedWhileDownloading, .untrustedFolder, .other:
            return nil
        }
    }
}

extension InputError {
    /// The line a person reads (an input error already says what to change).
    var line: String { message }
}
