/// The public suffixes of the Public Suffix List (publicsuffix.org): domains under which anyone may register a name
/// (`com`, `co.uk`, `github.io`), for which no site may set a cookie. curl and wget consult the list through libpsl;
/// a cookie a redirect sets for a public suffix would otherwise go to every site under it on the chain's next hops.
///
/// Read from the list's own text (``init(listText:)``), as Linux distributions ship it; without one
/// (``topLevelOnly``), only the implicit rule holds: every one-label name (`com`) is a public suffix. Pure.
package struct PublicSuffixes: Sendable, Equatable {
    /// Names that are public suffixes by a rule of their own (`co.uk`).
    private var exact: Set<String> = []
    /// Names whose every child is a public suffix (`ck` for `*.ck`).
    private var wildcardParents: Set<String> = []
    /// Names a wildcard would cover that are not public suffixes (`www.ck` for `!www.ck`).
    private var exceptions: Set<String> = []

    /// Only the implicit rule: every one-label name is a public suffix.
    package static let topLevelOnly = PublicSuffixes()

    private init() {}

    /// The rules of a list in the Public Suffix List's format: one rule a line, the first word of it; `//` starts a
    /// comment; `*.` makes every child a suffix, `!` an exception. Names are compared in ASCII: a rule in another
    /// script is kept in its Punycode form (`xn--55qx5d.cn` for `公司.cn`), as a URL's host arrives.
    package init(listText: String) {
        for line in listText.split(whereSeparator: { $0 == "\n" || $0 == "\r" }) {
            guard let word = line.split(whereSeparator: { $0 == " " || $0 == "\t" }).first, !word.hasPrefix("//") else { continue }
            var rule = Substring(word)
            var isException = false
            if rule.hasPrefix("!") {
                isException = true
                rule = rule.dropFirst()
            }
            var isWildcard = false
            if rule.hasPrefix("*.") {
                isWildcard = true
                rule = rule.dropFirst(2)
            }
            guard !rule.isEmpty, let name = Punycode.asciiName(String(rule).lowercased()) else { continue }
            if isException {
                exceptions.insert(name)
            } else if isWildcard {
                wildcardParents.insert(name)
            } else {
                exact.insert(name)
            }
        }
    }

    /// Whether `domain` (lower case, without a trailing dot) is a public suffix: a rule names it, a wildcard rule
    /// covers it and no exception takes it out, or it is one label. An address (`::1`, `127.0.0.1`) never is.
    package func isPublicSuffix(_ domain: String) -> Bool {
        guard !domain.isEmpty, IPAddress(domain) == nil else { return false }
        if exceptions.contains(domain) { return false }
        guard let dot = domain.firstIndex(of: ".") else { return true }
        if exact.contains(domain) { return true }
        return wildcardParents.contains(String(domain[domain.index(after: dot)...]))
    }

    /// How many rules were read (an empty list reads as ``topLevelOnly``).
    package var ruleCount: Int { exact.count + wildcardParents.count + exceptions.count }
}

/// Punycode (RFC 3492), the ASCII form of a domain name's labels in other scripts (IDNA's `xn--` labels).
package enum Punycode {
    /// `name` with each label that is not ASCII in its `xn--` form; `nil` when a label cannot be encoded.
    package static func asciiName(_ name: String) -> String? {
        guard !name.utf8.allSatisfy({ $0 < 0x80 }) else { return name }
        var labels: [String] = []
        for label in name.split(separator: ".", omittingEmptySubsequences: false) {
            if label.utf8.allSatisfy({ $0 < 0x80 }) {
                labels.append(String(label))
            } else {
                guard let encoded = encode(Array(label.unicodeScalars.map(\.value))) else { return nil }
                labels.append("xn--" + encoded)
            }
        }
        return labels.joined(separator: ".")
    }

    private static let base = 36, tMin = 1, tMax = 26, skew = 38, damp = 700

    /// RFC 3492 §6.3's encoding of the code points `input`; `nil` on overflow (a label no name has).
    package static func encode(_ input: [UInt32]) -> String? {
        var output: [UInt8] = input.filter { $0 < 0x80 }.map { UInt8($0) }
        let basic = output.count
        var handled = basic
        if basic > 0 { output.append(UInt8(ascii: "-")) }
        var n = 0x80, delta = 0, bias = 72
        while handled < input.count {
            guard let next = input.lazy.map({ Int($0) }).filter({ $0 >= n }).min() else { return nil }
            let (product, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= Int(Int32.max) - product else { return nil }
            delta += product
            n = next
            for scalar in input.map({ Int($0) }) {
                if scalar < n { delta += 1 }
                guard scalar == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, points: handled + 1, first: handled == basic)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func digit(_ value: Int) -> UInt8 {
        value < 26 ? UInt8(ascii: "a") + UInt8(value) : UInt8(ascii: "0") + UInt8(value - 26)
    }

    private static func adapt(_ delta: Int, points: Int, first: Bool) -> Int {
        var delta = first ? delta / damp : delta / 2
        delta += delta / points
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (base - tMin + 1) * delta / (delta + skew)
    }
}
