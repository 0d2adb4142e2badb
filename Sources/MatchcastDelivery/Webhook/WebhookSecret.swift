import Crypto
import Foundation

/// A Standard Webhooks signing secret, configured as `whsec_<base64 key>`.
///
/// The key never leaves this value in text form: `description`, `debugDescription` and the mirror
/// show only its length, and parse errors say what is wrong without echoing the input.
public struct WebhookSecret: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The prefix that marks a symmetric Standard Webhooks secret.
    public static let prefix = "whsec_"
    /// The spec asks for at least 24 random bytes (192 bits) and at most 64 (512 bits).
    public static let keyLengths = 24...64

    let key: SymmetricKey

    /// The number of key bytes.
    public var byteCount: Int { key.bitCount / 8 }

    /// Parses `whsec_<base64 key>`; surrounding whitespace (a trailing newline from a file) is ignored.
    public init(_ text: String) throws(WebhookSecretError) {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { throw .init(.empty) }
        guard trimmed.hasPrefix(Self.prefix) else { throw .init(.missingPrefix) }
        let encoded = String(trimmed.dropFirst(Self.prefix.count))
        guard !encoded.isEmpty else { throw .init(.empty) }
        guard let bytes = Self.decodeBase64(encoded) else { throw .init(.notBase64) }
        try self.init(keyBytes: bytes)
    }

    /// A secret from raw key bytes (for generating one, or tests).
    public init(keyBytes: [UInt8]) throws(WebhookSecretError) {
        guard Self.keyLengths.contains(keyBytes.count) else {
            throw .init(.badLength(keyBytes.count))
        }
        key = SymmetricKey(data: keyBytes)
    }

    /// A new random secret of `byteCount` bytes.
    public static func random(byteCount: Int = 32) throws(WebhookSecretError) -> WebhookSecret {
        var generator = SystemRandomNumberGenerator()
        return try WebhookSecret(keyBytes: (0..<byteCount).map { _ in UInt8.random(in: .min ... .max, using: &generator) })
    }

    /// The configuration form `whsec_<base64 key>`, for handing the secret to a receiver; never log it.
    public var encoded: String {
        Self.prefix + key.withUnsafeBytes { Data($0).base64EncodedString() }
    }

    public var description: String { "whsec_…(\(byteCount) bytes)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// Standard base64, with or without padding.
    private static func decodeBase64(_ text: String) -> [UInt8]? {
        var padded = text
        let remainder = padded.utf8.count % 4
        if remainder == 1 { return nil }
        if remainder > 0 { padded += String(repeating: "=", count: 4 - remainder) }
        return Data(base64Encoded: padded).map { Array($0) }
    }
}

/// A webhook secret could not be read. The description names the problem, never the secret.
public struct WebhookSecretError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case empty
        case missingPrefix
        case notBase64
        case badLength(Int)
    }

    let code: Code

    init(_ code: Code) {
        self.code = code
    }

    /// One of `empty`, `missing_prefix`, `not_base64`, `bad_length`: a fixed string for tests and alerts.
    public var reason: String {
        switch code {
        case .empty: "empty"
        case .missingPrefix: "missing_prefix"
        case .notBase64: "not_base64"
        case .badLength: "bad_length"
        }
    }

    public var description: String {
        switch code {
        case .empty:
            "webhook secret is empty"
        case .missingPrefix:
            "webhook secret must start with '\(WebhookSecret.prefix)' followed by a base64 key"
        case .notBase64:
            "webhook secret after '\(WebhookSecret.prefix)' is not valid base64"
        case .badLength(let count):
            "webhook secret key must be \(WebhookSecret.keyLengths.lowerBound) to \(WebhookSecret.keyLengths.upperBound) bytes, got \(count)"
        }
    }
}
