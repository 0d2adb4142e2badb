import Foundation

/// A value `CanonicalJSONWriter` writes without `Codable`: the same bytes `JSON.encoder()` makes of it.
public protocol CanonicalJSONWritable: Encodable {
    /// Writes the value (an object: its fields in sorted key order, as `JSON.encoder()` sorts them).
    func write(to json: inout CanonicalJSONWriter)
}

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

    // MARK: Objects and fields

    /// An object whose fields `body` writes, in sorted key order.
    public mutating func object(_ body: (inout CanonicalJSONWriter) -> Void) {
        let outer = needsComma
        needsComma = false
        bytes.append(UInt8(ascii: "{"))
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = outer
    }

    public mutating func field(_ key: StaticString, _ value: String) {
        self.key(key)
        appendString(value)
    }

    /// Left out when nil, as `encodeIfPresent` leaves it.
    public mutating func field(_ key: StaticString, _ value: String?) {
        guard let value else { return }
        field(key, value)
    }

    public mutating func field(_ key: StaticString, _ value: Int) {
        self.key(key)
        appendInt(value)
    }

    public mutating func field(_ key: StaticString, _ value: Int?) {
        guard let value else { return }
        field(key, value)
    }

    public mutating func field(_ key: StaticString, _ value: Bool) {
        self.key(key)
        appendBool(value)
    }

    /// A date as `JSON.encoder()`'s date strategy writes it.
    public mutating func field(_ key: StaticString, _ value: Date?) {
        guard let value else { return }
        field(key, JSON.formatDate(value))
    }

    public mutating func field<Raw: RawRepresentable<String>>(_ key: StaticString, _ value: Raw) {
        field(key, value.rawValue)
    }

    public mutating func field<Raw: RawRepresentable<String>>(_ key: StaticString, _ value: Raw?) {
        guard let value else { return }
        field(key, value.rawValue)
    }

    public mutating func field<Value: CanonicalJSONWritable>(_ key: StaticString, _ value: Value) {
        self.key(key)
        value.write(to: &self)
    }

    public mutating func field<Value: CanonicalJSONWritable>(_ key: StaticString, _ value: Value?) {
        guard let value else { return }
        field(key, value)
    }

    public mutating func field<Value: CanonicalJSONWritable>(_ key: StaticString, _ values: [Value]) {
        self.key(key)
        array(values) { json, value in value.write(to: &json) }
    }

    public mutating func field(_ key: StaticString, _ values: [String]?) {
        guard let values else { return }
        self.key(key)
        array(values) { json, value in json.appendString(value) }
    }

    public mutating func field(_ key: StaticString, _ values: [Bool]) {
        self.key(key)
        array(values) { json, value in json.appendBool(value) }
    }

    // MARK: Internals

    /// `"key":`, after a comma when a field came before it in the object. Keys are plain ASCII, written as they are.
    private mutating func key(_ key: StaticString) {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
        needsComma = true
        bytes.append(UInt8(ascii: "\""))
        key.withUTF8Buffer { bytes.append(contentsOf: $0) }
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
    }

    private mutating func array<Element>(_ values: [Element], _ each: (inout CanonicalJSONWriter, Element) -> Void) {
        let outer = needsComma
        bytes.append(UInt8(ascii: "["))
        for (index, value) in values.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            needsComma = false
            each(&self, value)
        }
        bytes.append(UInt8(ascii: "]"))
        needsComma = outer
    }

    private mutating func appendBool(_ value: Bool) {
        bytes.append(contentsOf: value ? "true".utf8 : "false".utf8)
    }

    private mutating func appendInt(_ value: Int) {
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

    private mutating func appendString(_ string: String) {
        JSONText.appendString(string, to: &bytes)
    }
}
