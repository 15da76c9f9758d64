import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A private certificate authority and the certificates the TLS tests need, made at test time with the
/// `openssl` command line (OpenSSL 3.0 on Debian 12) in a folder of their own:
///
/// - `ca.pem` / `ca.key`: the root CA ("Haul Test CA"), and `capath/`, a hashed directory holding it
///   (`openssl rehash`) for `--capath` / `SSL_CERT_DIR`;
/// - `server.pem`: valid for `localhost` and IP 127.0.0.1;
/// - `expired.pem`: the same names, valid only in January 2020;
/// - `wrong-name.pem`: valid, but for `wrong.example` only (no 127.0.0.1 SAN);
/// - `client.pem`: a client certificate (`clientAuth`) for servers that require one.
///
/// Every certificate is signed by the CA; every key (`NAME.key`, P-256, unencrypted PEM) is beside it.
/// The dates come from `openssl ca -startdate/-enddate`: OpenSSL 3.0's `x509 -req` has no way to give
/// a start date (`-not_before`/`-not_after` arrived in 3.4), and `-days -1` makes a certificate that ends
/// before it begins.
struct TestCertificates: Sendable {
    static let openssl = ExternalTools.find("openssl", also: ["/usr/bin", "/usr/local/bin"])
    static var enabled: Bool { openssl != nil || ExternalTools.inCI }

    /// The folder holding everything (deleted by whoever made it).
    let folder: String

    var caCertificate: String { folder + "/ca.pem" }
    /// An OpenSSL hashed CA directory (`<hash>.0` → `ca.pem`), for `--capath` and `SSL_CERT_DIR`.
    var caDirectory: String { folder + "/capath" }
    var serverCertificate: String { folder + "/server.pem" }
    var serverKey: String { folder + "/server.key" }
    var expiredCertificate: String { folder + "/expired.pem" }
    var expiredKey: String { folder + "/expired.key" }
    var wrongNameCertificate: String { folder + "/wrong-name.pem" }
    var wrongNameKey: String { folder + "/wrong-name.key" }
    var clientCertificate: String { folder + "/client.pem" }
    var clientKey: String { folder + "/client.key" }

    /// Makes the CA and all certificates in `folder` (created if needed).
    static func make(in folder: String) throws -> TestCertificates {
        guard let openssl else { throw HarnessError("openssl is not installed: apt-get install openssl") }
        try FileManager.default.createDirectory(atPath: folder + "/ca-db", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/capath", withIntermediateDirectories: true)
        try "".write(toFile: folder + "/ca-db/index.txt", atomically: true, encoding: .utf8)
        try caConfiguration.write(toFile: folder + "/ca.cnf", atomically: true, encoding: .utf8)
        let certificates = TestCertificates(folder: folder)
        func run(_ arguments: [String]) throws { try runTool(openssl, arguments, in: folder) }

        try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", "ca.key"])
        try run([
            "req", "-x509", "-new", "-key", "ca.key", "-out", "ca.pem", "-days", "3650", "-subj", "/CN=Haul Test CA",
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
            "-addext", "subjectKeyIdentifier=hash",
        ])
        /// A key, a request and a certificate signed by the CA with the extensions `section` of `ca.cnf`.
        func issue(_ name: String, commonName: String, section: String, dates: [String]) throws {
            try run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-out", name + ".key"])
            try run(["req", "-new", "-key", name + ".key", "-out", name + ".csr", "-subj", "/CN=" + commonName])
            // `-rand_serial`: no serial bookkeeping (the config still has to name a serial file in 3.0).
            try run([
                "ca", "-batch", "-config", "ca.cnf", "-cert", "ca.pem", "-keyfile", "ca.key", "-in", name + ".csr",
                "-out", name + ".pem", "-extensions", section, "-rand_serial", "-notext",
            ] + dates)
        }
        try issue("server", commonName: "localhost", section: "server", dates: ["-days", "30"])
        try issue("expired", commonName: "localhost", section: "server", dates: ["-startdate", "20200101000000Z", "-enddate", "20200201000000Z"])
        try issue("wrong-name", commonName: "wrong.example", section: "wrong_name", dates: ["-days", "30"])
        try issue("client", commonName: "haul test client", section: "client", dates: ["-days", "30"])
        try FileManager.default.copyItem(atPath: certificates.caCertificate, toPath: certificates.caDirectory + "/ca.pem")
        try runTool(openssl, ["rehash", certificates.caDirectory], in: folder)
        let hashed = try FileManager.default.contentsOfDirectory(atPath: certificates.caDirectory).filter { $0.hasSuffix(".0") }
        guard hashed.count == 1 else { throw HarnessError("openssl rehash made \(hashed) in \(certificates.caDirectory)") }
        return certificates
    }

    /// A `.htpasswd` line for nginx's `auth_basic_user_file` (`openssl passwd -apr1`, which nginx understands).
    static func htpasswdLine(user: String, password: String, in folder: String) throws -> String {
        guard let openssl else { throw HarnessError("openssl is not installed: apt-get install openssl") }
        let hash = try runTool(openssl, ["passwd", "-apr1", password], in: folder)
        return user + ":" + hash.trimmingCharacters(in: .whitespacesAndNewlines) + "\n"
    }

    /// `openssl ca`'s configuration: a database in `ca-db/`, any subject, and one extensions section per kind.
    private static let caConfiguration = """
        [ ca ]
        default_ca = test_ca
        [ test_ca ]
        database = ca-db/index.txt
        new_certs_dir = ca-db
        serial = ca-db/serial
        default_md = sha256
        policy = any_subject
        unique_subject = no
        email_in_dn = no
        [ any_subject ]
        commonName = supplied
        [ server ]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature,keyEncipherment
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:localhost,IP:127.0.0.1
        authorityKeyIdentifier = keyid
        [ wrong_name ]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature,keyEncipherment
        extendedKeyUsage = serverAuth
        subjectAltName = DNS:wrong.example
        authorityKeyIdentifier = keyid
        [ client ]
        basicConstraints = critical,CA:FALSE
        keyUsage = critical,digitalSignature
        extendedKeyUsage = clientAuth
        authorityKeyIdentifier = keyid

        """
}
