import Foundation

/// The one way Matchcast reads and writes JSON: ISO 8601 dates (fractional seconds accepted), sorted keys.
public enum JSON {
    /// A decoder for outside input; wrap its errors in `InputError` to name the field.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            guard let date = parseDate(text) else {
                throw DecodingError.dataCorruptedError(in: container, debugDescription: "not an ISO 8601 date: \(text.prefix(40))")
            }
            return date
        }
        return decoder
    }

    /// An encoder whose output is the same bytes for the same value: sorted keys, no escaped slashes.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(formatDate(date))
        }
        return encoder
    }

    /// Decodes `type` from `data`, turning any failure into an `InputError` naming the field.
    public static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(InputError) -> T {
        do {
            return try decoder().decode(type, from: data)
        } catch {
            throw InputError(error)
        }
    }

    /// `2026-04-21T15:12:09Z`, with or without fractional seconds or a numeric offset.
    public static func parseDate(_ text: String) -> Date? {
        if let date = try? Date(text, strategy: .iso8601) { return date }
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return try? fractional.parse(text)
    }

    /// `2026-04-21T15:12:09Z` (whole seconds, UTC).
    public static func formatDate(_ date: Date) -> String {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }
}
