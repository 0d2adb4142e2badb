import MatchcastCore
import PostgresNIO

/// A `text[]` parameter written in one pass: the array header, then each element's length and UTF-8 bytes copied into
/// room reserved once. PostgresNIO's `[String]` encodes element by element through the generic path (a length
/// placeholder, the string, the length set afterwards), which a fan-out chunk's thousands of ids make its largest
/// client-side cost.
struct PostgresTextArray: PostgresNonThrowingEncodable, Sendable {
    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    var values: [String]

    init(_ values: [String]) {
        self.values = values
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        PostgresArrayHeader.write(count: values.count, element: .text, into: &buffer)
        var total = 0
        for index in values.indices { total += 4 + values[index].utf8.count }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { raw in
            var offset = 0
            for index in values.indices {
                var value = values[index]
                value.withUTF8 { utf8 in
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

/// A `text[]` parameter of tokens as kept, written as `PostgresTextArray` writes text: a hex token's digits straight
/// from its 32 bytes, with no string made per element.
struct PostgresTokenArray: PostgresNonThrowingEncodable, Sendable {
    static var psqlType: PostgresDataType { .textArray }
    static var psqlFormat: PostgresFormat { .binary }

    var values: [CompactToken]

    init(_ values: [CompactToken]) {
        self.values = values
    }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer, context: PostgresEncodingContext<JSONEncoder>) {
        PostgresArrayHeader.write(count: values.count, element: .text, into: &buffer)
        var total = 0
        for index in values.indices { total += 4 + values[index].utf8Count }
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: total) { raw in
            var offset = 0
            for index in values.indices {
                values[index].withUTF8 { utf8 in
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
