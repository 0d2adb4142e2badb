import Foundation
import MatchcastCore

/// Values kept as JSON text in one column, with Matchcast's deterministic encoder (sorted keys,
/// whole-second ISO 8601 dates), so the same value is always the same text.
enum JSONColumn {
    static func encode<Value: Encodable>(_ value: Value, _ what: String) throws(StoreError) -> String {
        do {
            return String(decoding: try JSON.encoder().encode(value), as: UTF8.self)
        } catch {
            throw .invalid("cannot encode \(what) as JSON: \(error)")
        }
    }

    /// The same text, written without `Codable` (`CanonicalJSONWriter`): a snapshot's row, a fan-out's content.
    static func encode<Value: CanonicalJSONWritable>(_ value: Value, _ what: String) throws(StoreError) -> String {
        String(decoding: CanonicalJSONWriter.encode(value), as: UTF8.self)
    }

    static func decode<Value: Decodable>(_ type: Value.Type, from text: String, _ what: String) throws(StoreError) -> Value {
        do {
            return try JSON.decoder().decode(type, from: Data(text.utf8))
        } catch {
            throw .corrupt("stored \(what) is not valid JSON for \(type): \(error)")
        }
    }
}
