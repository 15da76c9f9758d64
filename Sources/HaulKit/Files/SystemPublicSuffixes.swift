import HaulCore

/// The Public Suffix List as the system ships it (Debian's and Fedora's `publicsuffix` package, which libpsl, curl and
/// wget read too), read once per process, the first time a cookie's domain is judged. Without one (macOS, iOS, a
/// system without the package), only the list's implicit rule holds: a one-label domain such as `com`.
package enum SystemPublicSuffixes {
    /// Where distributions keep the list, in order.
    static let paths = [
        "/usr/share/publicsuffix/public_suffix_list.dat",
        "/usr/share/publicsuffix/effective_tld_names.dat",
    ]

    /// The system's list, or ``PublicSuffixes/topLevelOnly`` when none can be read (a file that is not regular or
    /// is over its limit is not read: ``NamedFile/publicSuffixList``).
    package static let list: PublicSuffixes = {
        for path in paths {
            guard let contents = try? NamedFileReader.readNow(path, as: .publicSuffixList) else { continue }
            let list = PublicSuffixes(listText: String(decoding: contents.bytes, as: UTF8.self))
            if list.ruleCount > 0 { return list }
        }
        return .topLevelOnly
    }()
}
