import Foundation

/// ``FailureReason`` as JSON: one encoding for the task store's `errorReason` column, a task's `error.failure`
/// and a JSON-RPC error's `data.failure`, so a reason reads the same wherever it is kept or sent.
package enum FailureReasonJSON {
    /// The reason of `error` as JSON text; `nil` for ``FailureReason/other`` (no typed reason).
    package static func encode(_ error: HaulError) -> String? {
        guard error.reason != .other, let data = try? JSONEncoder().encode(error.reason) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    /// The reason `text` holds; `nil` when there is none or it is not one this build knows (a newer haul's).
    package static func decode(_ text: String?) -> FailureReason? {
        guard let text else { return nil }
        return try? JSONDecoder().decode(FailureReason.self, from: Data(text.utf8))
    }

    /// The reason of `error` as a JSON value, for the wire.
    package static func value(_ error: HaulError) -> JSONValue? {
        encode(error).flatMap { JSONValue.parse(Data($0.utf8)) }
    }

    /// The reason a wire value holds.
    package static func decode(_ value: JSONValue?) -> FailureReason? {
        value.flatMap { decode($0.serialized) }
    }
}
