// Files a user names in an option (a CA bundle, a client key, a netrc file, a URL list): how each kind is read and
// what Haul refuses before and while reading it. Pure: the shell (HaulKit's `NamedFileReader`) opens the file
// without blocking, asks ``NamedFile/problem(type:size:)`` about what `fstat` says, and reads at most
// ``NamedFile/maxBytes`` + 1 bytes, whatever the size it was told.

/// A kind of file a user names in an option, and the rules Haul reads it by.
///
/// Every such file is opened with `O_NONBLOCK` (opening a FIFO never waits for a writer), checked to be a regular
/// file on the descriptor opened (so a link to a FIFO or a device is refused like the FIFO itself), and read up to
/// its limit, off the concurrency threads. Only Haul's own private files are opened with `O_NOFOLLOW`: a file a user
/// names through a link is what the user asked for (certbot's `live/` links, the hashed CA layout, a netrc kept
/// with other dotfiles), and what is checked is the file the link leads to.
package enum NamedFile: Sendable, Equatable {
    /// `--cacert`, `SSL_CERT_FILE`, a task's `tls.caFile`: a PEM bundle of CA certificates.
    case caBundle
    /// One `HASH.N` certificate of a `--capath` folder (OpenSSL's hashed layout).
    case caFolderEntry
    /// `--cert`: a PEM client certificate (which may hold its key).
    case clientCertificate
    /// `--key`: the PEM private key of `--cert`.
    case clientKey
    /// `--netrc-file`, or `~/.netrc` with `--netrc`.
    case netrc
    /// `-i FILE`: URLs, one a line (``URLListScanner``).
    case urlList
    /// `-b FILE`, `--load-cookies FILE`: a Netscape cookie jar.
    case cookieJar
    /// `haul daemon --web-cert`: the dashboard's PEM certificate chain.
    case webCertificate
    /// `haul daemon --web-key`: the dashboard's PEM private key.
    case webKey
    /// Haul's own dashboard API key under the private `HAUL_HOME`.
    case apiKey
    /// The system's Public Suffix List (Debian's `publicsuffix` package), for the cookies redirects set.
    case publicSuffixList

    /// The largest file of this kind that is read. A CA bundle is some 200 KiB (Debian's), a certificate or key a
    /// few KiB; curl reads at most 128 KiB of a netrc file's text (without comments: the file may be larger).
    public var maxBytes: Int {
        switch self {
        case .caBundle: return 16 << 20
        case .caFolderEntry, .clientCertificate, .clientKey, .webCertificate, .webKey, .netrc: return 1 << 20
        case .urlList: return URLListScanner.maxListBytes
        case .cookieJar: return 16 << 20
        case .apiKey: return 4 << 10
        case .publicSuffixList: return 4 << 20
        }
    }

    /// Whether the path is opened with `O_NOFOLLOW`: only for Haul's own files in its private home.
    public var followsLinks: Bool { self != .apiKey }

    /// How a message names a file of this kind.
    public var noun: String {
        switch self {
        case .caBundle: return "the CA file"
        case .caFolderEntry: return "the CA certificate"
        case .clientCertificate: return "the client certificate"
        case .clientKey: return "the client certificate's private key"
        case .netrc: return "the netrc file"
        case .urlList: return "the URL list"
        case .cookieJar: return "the cookie file"
        case .webCertificate: return "the dashboard's certificate"
        case .webKey: return "the dashboard's private key"
        case .apiKey: return "the API key file"
        case .publicSuffixList: return "the public suffix list"
        }
    }

    /// What `fstat` says the opened file is.
    public enum FileType: Sendable, Equatable {
        case regular, directory, fifo, characterDevice, blockDevice, socket, symbolicLink, other
        /// `/dev/null` (or another name of it): read as an empty file, as scripts expect (`-i /dev/null`).
        case nullDevice
    }

    /// Why a file of this kind at `path`, of type `type` and `size` bytes (as `fstat` says), is not read; nil when
    /// it is. The size is checked again while reading: a file that grows, or one whose size `fstat` does not know
    /// (`/proc`), is cut at ``maxBytes`` + 1 bytes and refused. `readsPipe`: a pipe or FIFO is read too (a URL list
    /// named by `-i <(command)` or a named pipe, read once as it arrives, as standard input is, and only then checked).
    public func problem(_ path: String, type: FileType, size: Int64, readsPipe: Bool = false) -> String? {
        switch type {
        case .regular:
            return size > Int64(maxBytes) ? tooLarge(path) : nil
        case .nullDevice:
            return nil
        case .fifo where readsPipe:
            return nil
        case .directory:
            return "\(noun) \(path) is a folder, not a file"
        case .fifo, .characterDevice, .blockDevice, .socket, .symbolicLink, .other:
            let what: String
            switch type {
            case .fifo: what = "a FIFO"
            case .characterDevice, .blockDevice: what = "a device"
            case .socket: what = "a socket"
            case .symbolicLink: what = "a symbolic link"
            default: what = "not a regular file"
            }
            let hint = self == .urlList ? " (give - to read standard input)" : ""
            return "\(noun) \(path) is \(what == "not a regular file" ? what : what + ", not a regular file")\(hint)"
        }
    }

    /// The message for a file over ``maxBytes``.
    public func tooLarge(_ path: String) -> String {
        "\(noun) \(path) is larger than \(Self.describe(bytes: maxBytes)), the most Haul reads of it"
    }

    static func describe(bytes: Int) -> String {
        if bytes >= 1 << 20, bytes % (1 << 20) == 0 { return "\(bytes >> 20) MiB" }
        if bytes >= 1 << 10, bytes % (1 << 10) == 0 { return "\(bytes >> 10) KiB" }
        return "\(bytes) bytes"
    }

    /// Whether a file name in a `--capath` folder is one OpenSSL's hashed lookup would open: `HASH.N`, eight hex
    /// digits, a dot and a number. Only those are read: the folder may hold anything else (Debian's
    /// `/etc/ssl/certs` also has each certificate under its own name, and the whole bundle).
    public static func isHashedCertificateName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard bytes.count >= 10, bytes.count <= 12, bytes[8] == UInt8(ascii: ".") else { return false }
        let hex = bytes[0..<8].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        let number = bytes[9...].allSatisfy { (0x30...0x39).contains($0) }
        return hex && number
    }

    /// The most `HASH.N` entries read from one `--capath` folder.
    public static let maxFolderEntries = 10_000
}
