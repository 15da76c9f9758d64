extension TransferRecord {
    /// The record as the JSON its `Codable` form reads (the same members; absent ones left out), written without
    /// JSONEncoder: a session saves two records per download, and for thousands of tiny files JSONEncoder was a
    /// visible share of the run.
    var jsonText: String {
        var object: [String: JSONValue] = [
            "version": JSONValue(version), "url": .string(url), "destinationPath": .string(destinationPath),
            "partialPath": .string(partialPath), "offset": JSONValue(offset), "state": .string(state.rawValue),
            "adopted": .bool(adopted),
        ]
        if let finalURL { object["finalURL"] = .string(finalURL) }
        if let totalLength { object["totalLength"] = JSONValue(totalLength) }
        if let entityTag { object["entityTag"] = .string(entityTag) }
        if let lastModified { object["lastModified"] = .string(lastModified) }
        if let contentEncoding { object["contentEncoding"] = .string(contentEncoding) }
        if let segments {
            object["segments"] = .array(segments.map {
                ["id": JSONValue($0.id), "start": JSONValue($0.start), "end": JSONValue($0.end), "done": JSONValue($0.done)]
            })
        }
        return JSONValue.object(object).serialized
    }
}
