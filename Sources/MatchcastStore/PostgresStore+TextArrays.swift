import MatchcastCore
import PostgresNIO

/// A `text[]` parameter written in one pass: the array header, then each element's length and UTF-8 bytes copied into
/// room reserved once. PostgresNIO's `[String]` encodes element by element through the generic path (a length
/// placeholder, the string, the length set afterwards), which a fan-out chunk's thousands of ids make its largest
/// client-side cost. Its elements are strings, or tokens as kept (`CompactToken`), whose digits are written straight
/// from their 32 bytes with no string made per element.
struct PostgresTextArray<Element: PostgresTextElement>: PostgresNonThrowingEncodable, Sendable {
    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    var values: [Element]

    init(_ values: [Element]) {
        self.values = values
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        PostgresArrayHeader.write(count: values.count, element: .text, into: &buffer)
        var total = 0
        for index in values.indices { total += 4 + values[index].utf8Count }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { raw in
            var offset = 0
            for index in values.indices {
                values[index].withUTF8Bytes { utf8 in
                    let length = UInt32(utf8.count).bigEndian
                    withUnsafeBytes(of: length) { raw.baseAddress!.advanced(by: offset).copyMemory(from: $0.baseAddress!, byteCount: 4) }
                    if utf8.count > 0 {
                        raw.baseAddress!.advanced(by: offset + 4).copyMemory(from: utf8.baseAddress!, byteCount: utf8.count)
                    }
                    offset += 4 + utf8.count
                }
            }
            return offset
        }
    }
}

/// What a `PostgresTextArray` element is written from: its UTF-8 bytes.
protocol PostgresTextElement: Sendable {
    var utf8Count: Int { get }
    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result
}

extension String: PostgresTextElement {
    var utf8Count: Int { utf8.count }

    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        var text = self
        return text.withUTF8(body)
    }
}

extension CompactToken: PostgresTextElement {
    func withUTF8Bytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        withUTF8(body)
    }
}

/// An `integer[]` parameter written in one pass, as `PostgresTextArray` writes text.
struct PostgresInt32Array: PostgresNonThrowingEncodable, Sendable {
    static var psqlType: PostgresDataType { .int4Array }
    static var psqlFormat: PostgresFormat { .binary }

    var values: [Int32]

    init(_ values: [Int32]) {
        self.values = values
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        PostgresArrayHeader.write(count: values.count, element: .int4, into: &buffer)
        buffer.reserveCapacity(minimumWritableBytes: values.count * 8)
        for value in values { buffer.writeMultipleIntegers(Int32(4), value) }
    }
}

/// The header of a one-dimensional binary array without NULLs: dimensions, flags, element type, then (when not empty)
/// the length and the lower bound (1).
enum PostgresArrayHeader {
    static func write(count: Int, element: PostgresDataType, into buffer: inout ByteBuffer) {
        buffer.writeMultipleIntegers(Int32(count == 0 ? 0 : 1), Int32(0), element.rawValue)
        if count > 0 { buffer.writeMultipleIntegers(Int32(count), Int32(1)) }
    }
}
