import struct Foundation.URL

// The one JSON shape of a DownloadSpec (docs/protocol.md, `tasks.add`): what a client sends the daemon and what a
// session's store keeps in its `spec` column. What is not said is left out, so a plain download is `{"url": "..."}`.
//
//     {"url": "https://…", "path": "/abs/file" | "directory": "/abs/folder", "confinedTo": "/abs/folder",
//      "headers": [{"name": "…", "value": "…"}], "checksum": "sha256:…", "segments": 4,
//      "options": DownloadSettings (its synthesized Codable)}
extension DownloadSpec: Codable {
    private enum CodingKeys: String, CodingKey { case url, path, directory, confinedTo, headers, checksum, segments, options }

    /// One request header on the wire.
    private struct Header: Codable {
        var name: String
        var value: String
    }

    /// Reads the shape above and checks every value (``validate()``); the message of the error names the offending
    /// member (a setting's under `"options"`).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let text = try container.decode(String.self, forKey: .url)
        let url: URL
        do { url = try UserInput.url(text) } catch { throw InputError("\"url\": \(error.message)") }
        self.init(url: url)
        switch (try container.decodeIfPresent(String.self, forKey: .path), try container.decodeIfPresent(String.self, forKey: .directory)) {
        case (let path?, nil): destination = .file(path)
        case (nil, let folder?): destination = .directory(folder)
        case (nil, nil): break
        case (.some, .some): throw InputError("give \"path\" or \"directory\", not both")
        }
        // Absent in what older versions stored and sent: no confinement, as then.
        confinedTo = try container.decodeIfPresent(String.self, forKey: .confinedTo)
        if let fields = try container.decodeIfPresent([Header].self, forKey: .headers) {
            headers = try Self.headers(fields.map { ($0.name, $0.value) }, "headers")
        }
        if let text = try container.decodeIfPresent(String.self, forKey: .checksum) {
            do { checksum = try Checksum(parsing: text) } catch { throw InputError("\"checksum\": \(error.message)") }
        }
        segments = try container.decodeIfPresent(Int.self, forKey: .segments)
        settings = try container.decodeIfPresent(DownloadSettings.self, forKey: .options) ?? DownloadSettings()
        do { try settings.validate() } catch { throw InputError("\"options\": \(error.message)") }
        try validateOwnMembers()
    }

    /// Writes the shape above; `options` only when the settings say something.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url.absoluteString, forKey: .url)
        switch destination {
        case .file(let path)?: try container.encode(path, forKey: .path)
        case .directory(let folder)?: try container.encode(folder, forKey: .directory)
        case .standardOutput?, nil: break
        }
        try container.encodeIfPresent(confinedTo, forKey: .confinedTo)
        if !headers.fields.isEmpty { try container.encode(headers.fields.map { Header(name: $0.name, value: $0.value) }, forKey: .headers) }
        try container.encodeIfPresent(checksum?.description, forKey: .checksum)
        try container.encodeIfPresent(segments, forKey: .segments)
        if !settings.isEmpty { try container.encode(settings, forKey: .options) }
    }

    /// Header fields from names and values as the protocol carries them (a spec's `headers`, a session's
    /// `defaultHeaders`); a name or value that could not be sent is refused, naming `key`.
    package static func headers(_ fields: [(name: String, value: String)], _ key: String) throws(InputError) -> HTTPFields {
        var headers = HTTPFields()
        for (name, value) in fields {
            guard !name.isEmpty, !name.contains(where: { $0 == ":" || $0.isWhitespace || $0.isNewline }),
                  !value.contains(where: \.isNewline) else {
                throw InputError("\"\(key)\" holds an invalid header field \"\(name)\"")
            }
            headers.append(name, value)
        }
        return headers
    }
}
