import Foundation
import MatchcastCore

/// Finds the raw bytes of each top-level member of a JSON object, so a recorded body can be kept
/// byte for byte instead of being decoded and re-encoded.
///
/// It expects text that already parsed as JSON and only tracks nesting and strings; it answers
/// nil for anything that is not an object.
enum JSONObjectScanner {
    /// The top-level members of the object in `data`: key to the raw bytes of its value. A key
    /// given twice keeps its last value, as JSON parsers commonly do.
    static func members(of data: Data) -> [String: Data]? {
        let bytes = [UInt8](data)
        var index = skipSpace(bytes, 0)
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else { return nil }
        index = skipSpace(bytes, index + 1)
        var members: [String: Data] = [:]
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") { return members }
        while index < bytes.count {
            guard bytes[index] == UInt8(ascii: "\""), let keyEnd = skipString(bytes, index) else { return nil }
            guard let key = try? JSON.decoder().decode(String.self, from: Data(bytes[index..<keyEnd])) else { return nil }
            index = skipSpace(bytes, keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            let valueStart = skipSpace(bytes, index + 1)
            guard let valueEnd = skipValue(bytes, valueStart) else { return nil }
            members[key] = Data(bytes[valueStart..<valueEnd])
            index = skipSpace(bytes, valueEnd)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "}") { return members }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index = skipSpace(bytes, index + 1)
        }
        return nil
    }

    /// `data` without leading and trailing JSON whitespace.
    static func trimmed(_ data: Data) -> Data {
        let bytes = [UInt8](data)
        var start = 0
        var end = bytes.count
        while start < end, isSpace(bytes[start]) { start += 1 }
        while end > start, isSpace(bytes[end - 1]) { end -= 1 }
        return Data(bytes[start..<end])
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    private static func skipSpace(_ bytes: [UInt8], _ start: Int) -> Int {
        var index = start
        while index < bytes.count, isSpace(bytes[index]) { index += 1 }
        return index
    }

    /// The index just past the string opening at `start`.
    private static func skipString(_ bytes: [UInt8], _ start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    /// The index just past the value starting at `start`.
    private static func skipValue(_ bytes: [UInt8], _ start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return skipString(bytes, start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = skipString(bytes, index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default:
                    break
                }
                index += 1
            }
            return nil
        default:
            var index = start
            while index < bytes.count, !isSpace(bytes[index]),
                bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}"), bytes[index] != UInt8(ascii: "]")
            {
                index += 1
            }
            return index > start ? index : nil
        }
    }
}
