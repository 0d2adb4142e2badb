import Foundation

/// A JSON document as a value: what a JSON Patch (RFC 6902) is applied to.
///
/// Read and written with `JSONSerialization` (`parse`, `data`), not `Codable`: a `Decodable` enum can only try each
/// type in turn, and throws an error for every failed try, many times slower on a document of hundreds of KB.
enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The JSON text `data`, whole; nil when it is not JSON.
    static func parse(_ data: Data) -> JSONValue? {
        guard let object = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) else { return nil }
        return JSONValue(foundation: object)
    }

    /// The JSON text of this value.
    func data() throws -> Data {
        try JSONSerialization.data(withJSONObject: foundation, options: [.fragmentsAllowed])
    }

    private init?(foundation object: Any) {
        switch object {
        case is NSNull:
            self = .null
        case let number as NSNumber:
            // Booleans come as NSNumbers of type `c` (char); whole numbers as integers, the rest as doubles.
            switch number.objCType.pointee {
            case CChar(UInt8(ascii: "c")): self = .bool(number.boolValue)
            case CChar(UInt8(ascii: "d")), CChar(UInt8(ascii: "f")): self = .double(number.doubleValue)
            default: self = .int(number.intValue)
            }
        case let text as String:
            self = .string(text)
        case let items as [Any]:
            var values: [JSONValue] = []
            values.reserveCapacity(items.count)
            for item in items {
                guard let value = JSONValue(foundation: item) else { return nil }
                values.append(value)
            }
            self = .array(values)
        case let members as [String: Any]:
            var values: [String: JSONValue] = [:]
            values.reserveCapacity(members.count)
            for (key, item) in members {
                guard let value = JSONValue(foundation: item) else { return nil }
                values[key] = value
            }
            self = .object(values)
        default:
            return nil
        }
    }

    private var foundation: Any {
        switch self {
        case .null: NSNull()
        case .bool(let value): value
        case .int(let value): value
        case .double(let value): value
        case .string(let value): value
        case .array(let items): items.map(\.foundation)
        case .object(let members): members.mapValues(\.foundation)
        }
    }

    /// The member `key` of an object; nil for anything else.
    subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }
}
