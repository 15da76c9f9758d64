import Crypto
import struct Foundation.URL

/// The durable state of one download: enough to continue it after any interruption.
/// `offset` never runs ahead of the bytes fsync'd to `partialPath`.
package struct TransferRecord: Codable, Equatable, Sendable {
    /// Stable states only: a restart never finds a transitional one.
    public enum State: String, Codable, Sendable {
        case running, paused, failed, finished
    }

    public var version = 1
    public var url: String
    public var finalURL: String?
    public var destinationPath: String
    public var partialPath: String
    public var offset: Int64
    public var totalLength: Int64?
    public var entityTag: String?
    public var lastModified: String?
    /// The content coding the held bytes are in (`nil`: identity); a continuation must use the same.
    public var contentEncoding: String? = nil
    /// The server's digest of the whole file (RFC 9530), as `ALG:HEX`: the finished file must have it.
    public var reprDigest: String? = nil
    public var state: State
    /// The bytes held are a file Haul did not write (adopted with `--continue`), still at `destinationPath`
    /// until the server's bytes are shown to match them.
    public var adopted: Bool
    /// The length of the file given to `--continue` when Haul adopted it: bytes `0..<adoptedLength` were the user's
    /// before the download. Kept until the file is published, so that a download that ends otherwise (a checksum
    /// that does not match, `haul rm`, a file changed on the server) gives the user's bytes back as they were
    /// instead of deleting them (`nil`: the bytes held are all Haul's).
    public var adoptedLength: Int64? = nil
    /// For a segmented download: each range and how much of it is durable; `offset` is then their sum.
    public var segments: [Segment]? = nil
    /// Which file Haul writes the bytes to (``FileIdentity``: inode and birth time), and once published, the
    /// destination (the rename keeps it). A file found at the partial's or the destination's name later is trusted
    /// only if it is still that file (`nil` in records of older versions, and before the file exists).
    public var fileID: String? = nil

    public var validators: Validators {
        Validators(entityTag: entityTag.flatMap(EntityTag.init), lastModified: lastModified, contentEncoding: contentEncoding,
                   digest: reprDigest.flatMap { try? Checksum(parsing: $0) })
    }

    public var resumePoint: ResumePoint {
        ResumePoint(offset: offset, validators: validators, totalLength: totalLength)
    }

    public mutating func update(from point: ResumePoint) {
        offset = point.offset
        totalLength = point.totalLength
        entityTag = point.validators.entityTag?.rawValue
        lastModified = point.validators.lastModified
        contentEncoding = point.validators.contentEncoding
        reprDigest = point.validators.digest?.description
    }

    /// The file name of this record: see ``key(destinationPath:)``.
    public var key: String { Self.key(destinationPath: destinationPath) }

    /// The file name of the record for a destination: a digest of its absolute path. The destination is the
    /// identity of a partial download, so one `.haul-part` has exactly one record whichever URL wrote it.
    public static func key(destinationPath path: String) -> String {
        hexString(SHA256.hash(data: Array("v2\nfile:\(path)".utf8)))
    }

    /// The file name of the note that remembers which name a `--dir` download of `url` chose in `directory`.
    static func directoryKey(url: URL, directory: String) -> String {
        hexString(SHA256.hash(data: Array("v2\n\(url.absoluteString)\ndir:\(directory)".utf8)))
    }

    /// The key records had before version 2 (URL and destination as given), read once to carry them over.
    static func legacyKey(url: URL, destination: DownloadSpec.Destination) -> String? {
        let spec: String
        switch destination {
        case .file(let path): spec = "file:" + path
        case .directory(let path): spec = "dir:" + path
        case .standardOutput: return nil
        }
        return hexString(SHA256.hash(data: Array("v1\n\(url.absoluteString)\n\(spec)".utf8)))
    }
}
