/// A token as the broker keeps it in memory: the common form, 64 lowercase hex digits (an APNs token, the SHA-256 of a
/// device secret), as its 32 bytes inline; any other (an FCM token, a Web Push subscription, a longer or upper-case
/// one) as its string. The memory store keeps its devices' push-to-start tokens and secret hashes this way, and an
/// activity's update token goes this way from the lifecycle through its deliveries (`PushTarget.token`) to the sink.
///
/// Such a string holds 112 bytes of heap besides its own 16, and every copy of a record or a delivery holding it
/// counts a reference on that heap object; this holds 33 bytes and no reference. Where the text is written out (a
/// JSON line, an SQLite or PostgreSQL parameter) it is written from the digits (`withUTF8`, `appendJSONString`),
/// with no string made.
///
/// A string has exactly one form here (the digits only when it is exactly 64 lowercase hex digits), so two are equal
/// exactly when their strings are. `string` makes the string again on each read: compare with `==` where a string is
/// not needed.
public struct CompactToken: Sendable, Hashable {
    private enum Storage: Sendable, Hashable {
        /// The 32 bytes, big-endian, in four words.
        case digits(UInt64, UInt64, UInt64, UInt64)
        case text(String)
    }

    private let storage: Storage

    public init(_ string: String) {
        var text = string
        let words = text.withUTF8 { Self.words(ofHex: $0) }
        if let words {
            storage = .digits(words.0, words.1, words.2, words.3)
        } else {
            storage = .text(string)
        }
    }

    /// The token whose text is `utf8` (invalid UTF-8 repaired as `String(decoding:as:)` repairs it).
    public init(utf8: UnsafeBufferPointer<UInt8>) {
        if let words = Self.words(ofHex: utf8) {
            storage = .digits(words.0, words.1, words.2, words.3)
        } else {
            storage = .text(String(decoding: utf8, as: UTF8.self))
        }
    }

    /// The token's text.
    public var string: String {
        switch storage {
        case .text(let text):
            return text
        case let .digits(first, second, third, fourth):
            return String(unsafeUninitializedCapacity: 64) { text in
                Self.write(first, second, third, fourth, into: UnsafeMutableRawBufferPointer(text))
                return 64
            }
        }
    }

    /// The text's UTF-8 bytes, written on the stack for the digits: for writing the token out without a string.
    public func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        switch storage {
        case .text(var text):
            return text.withUTF8(body)
        case let .digits(first, second, third, fourth):
            var digits: (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0, 0, 0, 0, 0)
            return withUnsafeMutableBytes(of: &digits) { raw in
                Self.write(first, second, third, fourth, into: raw)
                return body(UnsafeBufferPointer(start: raw.baseAddress!.assumingMemoryBound(to: UInt8.self), count: 64))
            }
        }
    }

    /// The number of UTF-8 bytes of the text.
    public var utf8Count: Int {
        switch storage {
        case .text(let text): text.utf8.count
        case .digits: 64
        }
    }

    /// Appends the text as a JSON string, quotes and escapes included (`JSONText.appendString`'s bytes).
    public func appendJSONString(to out: inout [UInt8]) {
        switch storage {
        case .text(let text):
            JSONText.appendString(text, to: &out)
        case .digits:
            // Hex digits need no escaping.
            out.append(UInt8(ascii: "\""))
            withUTF8 { out.append(contentsOf: $0) }
            out.append(UInt8(ascii: "\""))
        }
    }

    /// Whether the token is 64 lowercase hex digits, kept as its 32 bytes: an APNs token, with no string to look at.
    public var isHexDigits: Bool {
        if case .digits = storage { return true }
        return false
    }

    /// The four big-endian words of 64 lowercase hex digits; nil for anything else.
    private static func words(ofHex bytes: UnsafeBufferPointer<UInt8>) -> (UInt64, UInt64, UInt64, UInt64)? {
        guard bytes.count == 64 else { return nil }
        var words: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        for index in 0..<4 {
            var word: UInt64 = 0
            for byte in bytes[(index * 16)..<(index * 16 + 16)] {
                let value: UInt8
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte &- UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): value = byte &- UInt8(ascii: "a") &+ 10
                default: return nil
                }
                word = word << 4 | UInt64(value)
            }
            switch index {
            case 0: words.0 = word
            case 1: words.1 = word
            case 2: words.2 = word
            default: words.3 = word
            }
        }
        return words
    }

    /// The 64 digits of the four words into the first 64 bytes of `raw`.
    private static func write(
        _ first: UInt64, _ second: UInt64, _ third: UInt64, _ fourth: UInt64, into raw: UnsafeMutableRawBufferPointer
    ) {
        write(first, at: 0, into: raw)
        write(second, at: 16, into: raw)
        write(third, at: 32, into: raw)
        write(fourth, at: 48, into: raw)
    }

    /// The 16 digits of `word` into `raw` from `start` on: each half's eight nibbles spread into the bytes of a word,
    /// then all eight turned into ASCII digits at once.
    @inline(__always)
    private static func write(_ word: UInt64, at start: Int, into raw: UnsafeMutableRawBufferPointer) {
        raw.storeBytes(of: digits(UInt32(truncatingIfNeeded: word >> 32)).bigEndian, toByteOffset: start, as: UInt64.self)
        raw.storeBytes(of: digits(UInt32(truncatingIfNeeded: word)).bigEndian, toByteOffset: start + 8, as: UInt64.self)
    }

    /// The eight hex digits of `half`, its lowest nibble's in the lowest byte.
    @inline(__always)
    private static func digits(_ half: UInt32) -> UInt64 {
        var nibbles = UInt64(half)
        nibbles = (nibbles | nibbles << 16) & 0x0000_FFFF_0000_FFFF
        nibbles = (nibbles | nibbles << 8) & 0x00FF_00FF_00FF_00FF
        nibbles = (nibbles | nibbles << 4) & 0x0F0F_0F0F_0F0F_0F0F
        // 1 in each byte whose nibble is 10 or more: those go to "a"..."f", 39 past where "0" + nibble would be.
        let letters = ((nibbles &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return nibbles &+ 0x3030_3030_3030_3030 &+ letters &* 39
    }
}

extension CompactToken: ExpressibleByStringLiteral {
    public init(stringLiteral value: String) {
        self.init(value)
    }
}

extension CompactToken: CustomStringConvertible {
    /// Redacted: a token is a credential, and this is what string interpolation and logging print.
    public var description: String { Redact.token(string) }
}
