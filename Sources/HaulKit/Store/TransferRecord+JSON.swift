extension TransferRecord {
    /// The record as the JSON its `Codable` form reads (the same members, in sorted order; absent ones left out),
    /// written without JSONEncoder or an intermediate dictionary: a session saves two records per download, and for
    /// thousands of tiny files building them was a visible share of the run.
    var jsonText: String {
        var out = "{\"adopted\":"
        out += adopted ? "true" : "false"
        if let adoptedLength { out += ",\"adoptedLength\":" + String(adoptedLength) }
        if let contentEncoding { Self.member("contentEncoding", string: contentEncoding, to: &out) }
        Self.member("destinationPath", string: destinationPath, to: &out)
        if let entityTag { Self.member("entityTag", string: entityTag, to: &out) }
        if let fileID { Self.member("fileID", string: fileID, to: &out) }
        if let finalURL { Self.member("finalURL", string: finalURL, to: &out) }
        if let lastModified { Self.member("lastModified", string: lastModified, to: &out) }
        out += ",\"offset\":" + String(offset)
        Self.member("partialPath", string: partialPath, to: &out)
        if let reprDigest { Self.member("reprDigest", string: reprDigest, to: &out) }
        if let segments {
            out += ",\"segments\":["
            for (index, segment) in segments.enumerated() {
                if index > 0 { out += "," }
                out += "{\"done\":" + String(segment.done) + ",\"end\":" + String(segment.end)
                out += ",\"id\":" + String(segment.id) + ",\"start\":" + String(segment.start) + "}"
            }
            out += "]"
        }
        Self.member("state", string: state.rawValue, to: &out)
        if let totalLength { out += ",\"totalLength\":" + String(totalLength) }
        Self.member("url", string: url, to: &out)
        out += ",\"version\":" + String(version) + "}"
        return out
    }

    private static func member(_ name: String, string value: String, to out: inout String) {
        out += ",\"" + name + "\":"
        JSONValue.writeString(value, to: &out)
    }
}
