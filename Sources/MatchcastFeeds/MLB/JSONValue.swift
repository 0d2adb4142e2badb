import Foundation

/// A JSON document as a value: what a JSON Patch (RFC 6902) is applied to.
///
/// Whole documents are read and written with `JSONSerialization` (`parse`, `data`): `Decodable`, which can only try
/// each type in turn, throws an error for every failed try, many times slower on a document of hundreds of KB.
enum JSONValue: Sendable, Hashable, Codable {
    case null
    case bool(Bool)
    case int(Int)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int.self) {
            self = .int(value)
        } else if let value = try? container.decode(Double.self) {
            self = .double(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let value): try container.encode(value)
        case .int(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let value): try container.encode(value)
        case .array(let value): try container.encode(value)
        case .object(let value): try container.encode(value)
        }
    }

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
