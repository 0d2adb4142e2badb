import Foundation

/// A value `CanonicalJSONWriter` writes without `Codable`: the same bytes `JSON.encoder()` makes of it.
public protocol CanonicalJSONWritable: Encodable {
    /// Writes the value (an object: its fields in sorted key order, as `JSON.encoder()` sorts them).
    func write(to json: inout CanonicalJSONWriter)
}

/// An enum written as its raw value, as its synthesized `Encodable` writes it.
public protocol CanonicalJSONRawValue: CanonicalJSONWritable, RawRepresentable<String> {}

/// Writes JSON byte for byte as `JSON.encoder()` does (keys sorted, slashes unescaped, dates as `JSON.formatDate`),
/// for the values a changed poll stores: a match's snapshot (its row) and the content a fan-out sent. The encoder
/// reaches every field through `Codable`'s keyed containers, which cost more than writing the row; each type written
/// here names its keys in sorted order itself, and tests hold its bytes to the encoder's, field by field.
public struct CanonicalJSONWriter {
    public private(set) var bytes: [UInt8] = []
    /// Whether the next field or element follows another in its object or array.
    private var needsComma = false

    public init(capacity: Int = 512) {
        bytes.reserveCapacity(capacity)
    }

    /// `value` as `JSON.encoder().encode(value)` writes it.
    public static func encode<Value: CanonicalJSONWritable>(_ value: Value) -> [UInt8] {
        var json = CanonicalJSONWriter()
        value.write(to: &json)
        return json.bytes
    }

    /// An object whose fields `body` writes, in sorted key order.
    public mutating func object(_ body: (inout CanonicalJSONWriter) -> Void) {
        let outer = needsComma
        needsComma = false
        bytes.append(UInt8(ascii: "{"))
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = outer
    }

    /// `"key":value`, after a comma when a field came before it in the object. Keys are plain ASCII, written as
    /// they are.
    public mutating func field<Value: CanonicalJSONWritable>(_ key: StaticString, _ value: Value) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        value.write(to: &self)
    }

    /// Left out when nil, as `encodeIfPresent` leaves it.
    public mutating func field<Value: CanonicalJSONWritable>(_ key: StaticString, _ value: Value?) {
        guard let value else { return }
        field(key, value)
    }

    // MARK: Values

    mutating func appendArray<Element: CanonicalJSONWritable>(_ values: [Element]) {
        let outer = needsComma
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            needsComma = false
            value.write(to: &self)
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = outer
    }

    mutating func appendBool(_ value: Bool) {
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    mutating func appendInt(_ value: Int) {
        guard value != 0 else { return bytes.append(UInt8(ascii: "0")) }
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Digits of the magnitude, least significant first (Int.min's magnitude fits a UInt).
        var magnitude = value.magnitude
        let start = bytes.count
        while magnitude > 0 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        }
        bytes[start...].reverse()
    }

    mutating func appendString(_ string: String) {
        JSONText.appendString(string, to: &bytes)
    }
}

extension String: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) { json.appendString(self) }
}

extension Int: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) { json.appendInt(self) }
}

extension Bool: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) { json.appendBool(self) }
}

/// As `JSON.encoder()`'s date strategy writes it.
extension Date: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) { json.appendString(JSON.formatDate(self)) }
}

extension Array: CanonicalJSONWritable where Element: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) { json.appendArray(self) }
}

extension CanonicalJSONRawValue {
    public func write(to json: inout CanonicalJSONWriter) { json.appendString(rawValue) }
}
