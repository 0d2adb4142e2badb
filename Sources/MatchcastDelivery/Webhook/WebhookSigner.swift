import Crypto
import Foundation

/// Signs and verifies webhook requests by the Standard Webhooks scheme (docs/formats.md, "Webhook"):
/// `webhook-signature: v1,<base64(HMAC-SHA256(key, "<id>.<timestamp>.<body>"))>`.
public struct WebhookSigner: Sendable {
    /// Header names, lower-cased as HTTP/2 sends them.
    public enum Header {
        public static let id = "webhook-id"
        public static let timestamp = "webhook-timestamp"
        public static let signature = "webhook-signature"
    }

    /// How far a request's timestamp may be from the receiver's clock, either way.
    public static let tolerance: Duration = .seconds(300)

    private let key: SymmetricKey

    public init(secret: WebhookSecret) {
        key = secret.key
    }

    /// The `webhook-signature` value for one attempt: `v1,` and the base64 HMAC.
    public func signature(id: String, timestamp: Int64, body: some DataProtocol) -> String {
        "v1," + Data(mac(id: id, timestamp: String(timestamp), body: body)).base64EncodedString()
    }

    /// The three Standard Webhooks headers for one attempt, in a stable order.
    public func headers(id: String, timestamp: Int64, body: some DataProtocol) -> [(name: String, value: String)] {
        [
            (Header.id, id),
            (Header.timestamp, String(timestamp)),
            (Header.signature, signature(id: id, timestamp: timestamp, body: body)),
        ]
    }

    /// Checks a received request: the timestamp is an integer within `tolerance` of `now`, and at least
    /// one of the space-separated `v1,` signatures matches (others, such as `v1a,` from a key the
    /// receiver does not hold, are skipped). Comparison is constant-time.
    public func verify(
        id: String?, timestamp: String?, signatures: String?, body: some DataProtocol, now: Date = Date()
    ) throws(WebhookVerificationError) {
        guard let id, !id.isEmpty else { throw .init(.missingHeader(Header.id)) }
        guard let timestamp, !timestamp.isEmpty else { throw .init(.missingHeader(Header.timestamp)) }
        guard let signatures, !signatures.isEmpty else { throw .init(.missingHeader(Header.signature)) }
        guard let seconds = Int64(timestamp) else { throw .init(.badTimestamp) }
        let skew = abs(now.timeIntervalSince1970 - Double(seconds))
        guard skew <= Double(Self.tolerance.components.seconds) else { throw .init(.timestampOutOfTolerance) }

        let expected = mac(id: id, timestamp: timestamp, body: body)
        for candidate in signatures.split(separator: " ", omittingEmptySubsequences: true) {
            guard candidate.hasPrefix("v1,"), let bytes = Data(base64Encoded: String(candidate.dropFirst(3))) else {
                continue
            }
            if expected == bytes { return }
        }
        throw .init(.noMatchingSignature)
    }

    /// HMAC over `id.timestamp.body`, fed piecewise so the body is never copied.
    private func mac(id: String, timestamp: String, body: some DataProtocol) -> HMAC<SHA256>.MAC {
        var hmac = HMAC<SHA256>(key: key)
        let dot: [UInt8] = [UInt8(ascii: ".")]
        hmac.update(data: Array(id.utf8))
        hmac.update(data: dot)
        hmac.update(data: Array(timestamp.utf8))
        hmac.update(data: dot)
        hmac.update(data: body)
        return hmac.finalize()
    }
}

/// A webhook request failed verification. `reason` is a fixed string; nothing secret is described.
public struct WebhookVerificationError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case missingHeader(String)
        case badTimestamp
        case timestampOutOfTolerance
        case noMatchingSignature
    }

    let code: Code

    init(_ code: Code) {
        self.code = code
    }

    /// One of `missing_header`, `bad_timestamp`, `timestamp_out_of_tolerance`, `no_matching_signature`.
    public var reason: String {
        switch code {
        case .missingHeader: "missing_header"
        case .badTimestamp: "bad_timestamp"
        case .timestampOutOfTolerance: "timestamp_out_of_tolerance"
        case .noMatchingSignature: "no_matching_signature"
        }
    }

    public var description: String {
        switch code {
        case .missingHeader(let name): "missing header '\(name)'"
        case .badTimestamp: "webhook-timestamp is not an integer number of seconds"
        case .timestampOutOfTolerance: "webhook-timestamp is more than 5 minutes from now"
        case .noMatchingSignature: "no v1 signature matches"
        }
    }
}
