import Crypto

/// Computes a digest while bytes stream through.
struct Checksummer {
    private enum State {
        case md5(Insecure.MD5)
        case sha1(Insecure.SHA1)
        case sha256(SHA256)
        case sha512(SHA512)
    }

    let algorithm: ChecksumAlgorithm
    private var state: State
    /// How many bytes from the start of the file have been hashed.
    private(set) var hashedLength: Int64 = 0

    init(_ algorithm: ChecksumAlgorithm) {
        self.algorithm = algorithm
        switch algorithm {
        case .md5: state = .md5(Insecure.MD5())
        case .sha1: state = .sha1(Insecure.SHA1())
        case .sha256: state = .sha256(SHA256())
        case .sha512: state = .sha512(SHA512())
        }
    }

    mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hashedLength += Int64(bytes.count)
        switch state {
        case .md5(var h): h.update(bufferPointer: bytes); state = .md5(h)
        case .sha1(var h): h.update(bufferPointer: bytes); state = .sha1(h)
        case .sha256(var h): h.update(bufferPointer: bytes); state = .sha256(h)
        case .sha512(var h): h.update(bufferPointer: bytes); state = .sha512(h)
        }
    }

    /// A hasher of `algorithm` over bytes `0..<length` of `file`, read from it (on the caller's thread: a blocking-I/O
    /// one, or where a read of a local file may wait).
    static func hashing(_ file: PartialFile, upTo length: Int64, _ algorithm: ChecksumAlgorithm) throws(HaulError) -> Checksummer {
        var hasher = Checksummer(algorithm)
        try file.forEachChunk(upTo: length) { chunk in chunk.withUnsafeBytes { hasher.update($0) } }
        return hasher
    }

    /// The lower-case hex digest of everything hashed so far.
    func hexDigest() -> String {
        switch state {
        case .md5(let h): return hexString(h.finalize())
        case .sha1(let h): return hexString(h.finalize())
        case .sha256(let h): return hexString(h.finalize())
        case .sha512(let h): return hexString(h.finalize())
        }
    }
}
