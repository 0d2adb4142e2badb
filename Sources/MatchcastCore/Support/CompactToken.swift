/// A token as the broker keeps it in memory, one per device: the common form, 64 lowercase hex digits (an APNs
/// token, the SHA-256 of a device secret), as its 32 bytes inline; any other (an FCM token, a Web Push subscription,
/// a longer or upper-case one) as its string. The memory store keeps its devices' push-to-start tokens and secret
/// hashes this way.
///
/// Such a string holds 112 bytes of heap besides its own 16, and every copy of a record holding it counts a reference
/// on that heap object; this holds 33 bytes and no reference. (An activity's update token stays a `String`: a fan-out
/// hands it to every delivery, and making its string per delivery cost more than the memory saved.)
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

    /// The token's text.
    public var string: String {
        switch storage {
        case .text(let text):
            return text
        case let .digits(first, second, third, fourth):
            return withUnsafeBytes(of: (first.bigEndian, second.bigEndian, third.bigEndian, fourth.bigEndian)) {
                Hex.lowercase($0, count: 32)
            }
        }
    }

    /// Whether the token is kept as its 32 bytes (for tests).
    var isHexDigits: Bool {
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
}

extension CompactToken: CustomStringConvertible {
    /// Redacted: a token is a credential, and this is what string interpolation and logging print.
    public var description: String { Redact.token(string) }
}
