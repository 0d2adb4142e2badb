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
        if let date = parseWholeSecondsUTC(text) { return date }
        if let date = try? Date(text, strategy: .iso8601) { return date }
        let fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
        return try? fractional.parse(text)
    }

    /// `2026-04-21T15:12:09Z` exactly (what feeds send, and `formatDate` writes) in 1600...9999, every field in its
    /// range, read from its digits; nil for anything else, which Foundation's parsers then read or refuse.
    static func parseWholeSecondsUTC(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { bytes -> Date? in
            guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
                  bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
                  bytes[19] == UInt8(ascii: "Z")
            else { return nil }
            func number(_ from: Int, _ count: Int) -> Int? {
                var value = 0
                for index in from..<from + count {
                    let digit = bytes[index] &- UInt8(ascii: "0")
                    guard digit < 10 else { return nil }
                    value = value * 10 + Int(digit)
                }
                return value
            }
            guard let year = number(0, 4), let month = number(5, 2), let day = number(8, 2), let hour = number(11, 2),
                  let minute = number(14, 2), let second = number(17, 2),
                  (1600...9999).contains(year), (1...12).contains(month),
                  (1...CivilDate.days(inMonth: month, of: year)).contains(day),
                  hour < 24, minute < 60, second < 60
            else { return nil }
            let days = CivilDate.daysSince1970(year: year, month: month, day: day)
            return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
        }
    }

    /// `2026-04-21T15:12:09Z` (whole seconds, UTC).
    public static func formatDate(_ date: Date) -> String {
        let seconds = date.timeIntervalSince1970.rounded(.down)
        // Written from the Gregorian calendar date here (every snapshot's row holds two); Foundation's formatter only
        // outside 1600...9999 (before 1582 it counts Julian dates) and for dates that are not finite.
        guard seconds >= -11_676_096_000, seconds < 253_402_300_800 else {
            return Date(timeIntervalSince1970: seconds).formatted(.iso8601)
        }
        let (days, secondOfDay) = Int(seconds).quotientAndRemainder(dividingBy: 86_400)
        let (day, time) = secondOfDay < 0 ? (days - 1, secondOfDay + 86_400) : (days, secondOfDay)
        var text: [UInt8] = []
        text.reserveCapacity(20)
        CivilDate.appendDateTime(days: day, second: time, separator: UInt8(ascii: "T"), to: &text)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }
}
