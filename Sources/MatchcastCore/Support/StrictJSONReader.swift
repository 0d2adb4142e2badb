/// A reader of JSON text for the feed's hot path that answers only when sure: every method gives nil (or false) as
/// soon as the text is anything but plain, valid JSON of the expected shape, and its caller then hands the whole
/// body to Foundation's decoder, which decides (and names the error). So it never accepts text that decoder refuses,
/// and what it reads is what that decoder would read: strings with `\u` escapes, numbers with a fraction or an
/// exponent, keys that are escaped or repeated, nesting deeper than 64 are all left to Foundation.
struct StrictJSONReader {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0
    private var depth = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Whether only white space is left.
    mutating func isAtEnd() -> Bool {
        skipSpace()
        return index == bytes.count
    }

    /// The position of the next value, to read it again later (`reread(at:)`).
    mutating func mark() -> Int {
        skipSpace()
        return index
    }

    /// A reader at `position` (from `mark()`), at the depth of this one.
    func reread(at position: Int) -> StrictJSONReader {
        var reader = self
        reader.index = position
        return reader
    }

    // MARK: Values

    /// Consumes `null` if it is next.
    mutating func readNull() -> Bool {
        skipSpace()
        return consumeLiteral("null")
    }

    mutating func readBool() -> Bool? {
        skipSpace()
        if consumeLiteral("true") { return true }
        if consumeLiteral("false") { return false }
        return nil
    }

    /// An integer written plainly (`-?(0|[1-9][0-9]*)`) that fits an `Int`.
    mutating func readInt() -> Int? {
        skipSpace()
        var at = index
        let negative = at < bytes.count && bytes[at] == UInt8(ascii: "-")
        if negative { at += 1 }
        guard at < bytes.count, Self.isDigit(bytes[at]) else { return nil }
        if bytes[at] == UInt8(ascii: "0"), at + 1 < bytes.count, Self.isDigit(bytes[at + 1]) { return nil }
        var value = 0
        while at < bytes.count, Self.isDigit(bytes[at]) {
            let digit = Int(bytes[at] &- UInt8(ascii: "0"))
            let (times, overflow) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = negative ? times.subtractingReportingOverflow(digit) : times.addingReportingOverflow(digit)
            guard !overflow, !overflow2 else { return nil }
            value = sum
            at += 1
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") || bytes[at] | 0x20 == UInt8(ascii: "e") { return nil }
        index = at
        return value
    }

    /// A string whose escapes, if any, are the short ones (`\"`, `\\`, `\/`, `\b`, `\f`, `\n`, `\r`, `\t`), of valid
    /// UTF-8 and no raw control characters.
    mutating func readString() -> String? {
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        var at = index + 1
        let start = at
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                let string = String(validating: UnsafeBufferPointer(rebasing: bytes[start..<at]), as: UTF8.self)
                index = at + 1
                return string
            }
            if byte == UInt8(ascii: "\\") { return readEscapedString(from: start) }
            if byte < 0x20 { return nil }
            at += 1
        }
        return nil
    }

    /// An object: `member` is called with each key (its raw bytes, unescaped) and reads that key's value. Nil when a
    /// key is escaped, `member` gives false, or the object is malformed.
    mutating func readObject(_ member: (inout StrictJSONReader, UnsafeBufferPointer<UInt8>) -> Bool) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{"), depth < 64 else { return false }
        index += 1
        depth += 1
        defer { depth -= 1 }
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return true
        }
        while true {
            skipSpace()
            guard let key = readPlainKey() else { return false }
            skipSpace()
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
            index += 1
            guard member(&self, key) else { return false }
            skipSpace()
            guard index < bytes.count else { return false }
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return true
            }
            guard bytes[index] == UInt8(ascii: ",") else { return false }
            index += 1
        }
    }

    /// An array: `element` reads each element.
    mutating func readArray(_ element: (inout StrictJSONReader) -> Bool) -> Bool {
        skipSpace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "["), depth < 64 else { return false }
        index += 1
        depth += 1
        defer { depth -= 1 }
        skipSpace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return true
        }
        while true {
            guard element(&self) else { return false }
            skipSpace()
            guard index < bytes.count else { return false }
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return true
            }
            guard bytes[index] == UInt8(ascii: ",") else { return false }
            index += 1
        }
    }

    /// Any value, checked and passed over (a field the reader's caller does not know).
    mutating func skipValue() -> Bool {
        skipSpace()
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "{"): return readObject { reader, _ in reader.skipValue() }
        case UInt8(ascii: "["): return readArray { reader in reader.skipValue() }
        case UInt8(ascii: "\""): return readString() != nil
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return readBool() != nil
        case UInt8(ascii: "n"): return readNull()
        default: return skipNumber()
        }
    }

    /// Passes over a value as `skipValue` does, noting in `position` where it starts (to read it with `reread(at:)`).
    mutating func skipValue(markingAt position: inout Int?) -> Bool {
        position = mark()
        return skipValue()
    }

    /// Whether `key` is `name`.
    static func key(_ key: UnsafeBufferPointer<UInt8>, is name: StaticString) -> Bool {
        name.utf8CodeUnitCount == key.count
            && name.withUTF8Buffer { $0.elementsEqual(key) }
    }

    // MARK: Internals

    private mutating func skipSpace() {
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): index += 1
            default: return
            }
        }
    }

    private mutating func consumeLiteral(_ literal: StaticString) -> Bool {
        let count = literal.utf8CodeUnitCount
        guard bytes.count - index >= count,
              literal.withUTF8Buffer({ $0.elementsEqual(UnsafeBufferPointer(rebasing: bytes[index..<index + count])) })
        else { return false }
        // A literal runs into the next token only at a delimiter.
        let end = index + count
        if end < bytes.count, !Self.isDelimiter(bytes[end]) { return false }
        index = end
        return true
    }

    /// A key's bytes, when it has no escape.
    private mutating func readPlainKey() -> UnsafeBufferPointer<UInt8>? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        var at = index + 1
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                let key = UnsafeBufferPointer(rebasing: bytes[index + 1..<at])
                index = at + 1
                return key
            }
            if byte == UInt8(ascii: "\\") || byte < 0x20 || byte >= 0x80 { return nil }
            at += 1
        }
        return nil
    }

    /// The rest of a string that has escapes, from its first byte at `start`.
    private mutating func readEscapedString(from start: Int) -> String? {
        var out: [UInt8] = []
        var at = start
        while at < bytes.count {
            let byte = bytes[at]
            switch byte {
            case UInt8(ascii: "\""):
                index = at + 1
                return String(validating: out, as: UTF8.self)
            case UInt8(ascii: "\\"):
                guard at + 1 < bytes.count else { return nil }
                switch bytes[at + 1] {
                case UInt8(ascii: "\""): out.append(UInt8(ascii: "\""))
                case UInt8(ascii: "\\"): out.append(UInt8(ascii: "\\"))
                case UInt8(ascii: "/"): out.append(UInt8(ascii: "/"))
                case UInt8(ascii: "b"): out.append(0x08)
                case UInt8(ascii: "f"): out.append(0x0C)
                case UInt8(ascii: "n"): out.append(UInt8(ascii: "\n"))
                case UInt8(ascii: "r"): out.append(UInt8(ascii: "\r"))
                case UInt8(ascii: "t"): out.append(UInt8(ascii: "\t"))
                default: return nil
                }
                at += 2
            case 0..<0x20:
                return nil
            default:
                out.append(byte)
                at += 1
            }
        }
        return nil
    }

    /// A number as JSON writes one (`-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`), at most 32 characters.
    private mutating func skipNumber() -> Bool {
        var at = index
        func digits() -> Bool {
            let from = at
            while at < bytes.count, Self.isDigit(bytes[at]) { at += 1 }
            return at > from
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "-") { at += 1 }
        guard at < bytes.count, Self.isDigit(bytes[at]) else { return false }
        if bytes[at] == UInt8(ascii: "0") {
            at += 1
        } else {
            _ = digits()
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: ".") {
            at += 1
            guard digits() else { return false }
        }
        if at < bytes.count, bytes[at] == UInt8(ascii: "e") || bytes[at] == UInt8(ascii: "E") {
            at += 1
            if at < bytes.count, bytes[at] == UInt8(ascii: "+") || bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard digits() else { return false }
        }
        guard at - index <= 32, at == bytes.count || Self.isDelimiter(bytes[at]) else { return false }
        index = at
        return true
    }

    private static func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private static func isDelimiter(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"), UInt8(ascii: ","),
             UInt8(ascii: "}"), UInt8(ascii: "]"):
            true
        default:
            false
        }
    }
}
