import Crypto
import Foundation

/// One push to one browser subscription (RFC 8030 §5): the encrypted body and the headers a push service reads, and
/// what its answer means for the subscription.
public struct WebPushMessage: Sendable, Hashable {
    /// A browser's `PushSubscription`, as `toJSON()` gives it: where to push, and the keys to encrypt with.
    public struct Subscription: Sendable, Hashable {
        public var endpoint: URL
        /// `keys.p256dh`: the browser's P-256 public key, 65 bytes uncompressed.
        public var p256dh: Data
        /// `keys.auth`: 16 bytes.
        public var auth: Data

        public init(endpoint: URL, p256dh: Data, auth: Data) {
            self.endpoint = endpoint
            self.p256dh = p256dh
            self.auth = auth
        }
    }

    /// RFC 8030 §5.3: how soon the push service should wake the device for it.
    public enum Urgency: String, Sendable, Hashable {
        case veryLow = "very-low", low, normal, high
    }

    public var endpoint: URL
    /// Lower-cased names: `content-encoding`, `content-type`, `ttl`, `urgency`, `topic` when given, `authorization`.
    public var headers: [String: String]
    public var body: Data

    /// Encrypts `payload` for `subscription` and signs for its push service with `vapid`. `ttl`: how long the push
    /// service keeps it for an offline device (seconds, 0: deliver now or drop). `topic`: pushes with the same topic
    /// replace one another while undelivered (RFC 8030 §5.4: at most 32 base64url characters); an update replaces
    /// the last one this way.
    /// `vapidTokens`, when given, supplies the VAPID token (one per push service origin, reused: `VAPIDTokenCache`);
    /// without it a token is signed for this message alone.
    public init(
        payload: some DataProtocol, to subscription: Subscription, vapid: VAPIDCredentials, ttl: Int, urgency: Urgency,
        topic: String?, now: Date, vapidTokens: VAPIDTokenCache? = nil
    ) throws {
        guard ttl >= 0 else { throw WebPushMessageError("TTL must not be negative") }
        if let topic {
            guard (1...32).contains(topic.utf8.count),
                  topic.utf8.allSatisfy({ Self.base64URLAlphabet.contains($0) })
            else { throw WebPushMessageError("topic '\(topic.prefix(40))' is not 1 to 32 base64url characters") }
        }
        endpoint = subscription.endpoint
        body = try WebPushEncryption.encrypt(payload, userAgentPublicKey: subscription.p256dh, authSecret: subscription.auth)
        var headers = [
            "content-encoding": "aes128gcm", "content-type": "application/octet-stream", "ttl": String(ttl),
            "urgency": urgency.rawValue,
            "authorization": try vapidTokens?.authorization(for: subscription.endpoint, now: now)
                ?? vapid.authorization(for: subscription.endpoint, now: now).value,
        ]
        if let topic { headers["topic"] = topic }
        self.headers = headers
    }

    /// The `Topic` of every push of a match (RFC 8030 §5.4): the first 24 bytes of SHA-256 over the match id
    /// (UTF-8), base64url, so exactly 32 characters of its alphabet whatever the id, the same in every process
    /// and release, and different for two matches. A push service keeps only the newest undelivered push of a
    /// topic, so a browser that was offline gets the latest score, not the backlog.
    public static func topic(forMatch matchId: String) -> String {
        Base64URL.encode(Array(SHA256.hash(data: Array(matchId.utf8))).prefix(24))
    }

    private static let base64URLAlphabet = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8))

    /// What a push service's answer means (RFC 8030 §5, §6.2 and §7.3; RFC 8292 §4).
    public enum Outcome: Sendable, Hashable {
        /// 201 (or another 2xx): the push service took it.
        case accepted
        /// 404 or 410: the subscription is gone for good; drop it.
        case subscriptionGone
        /// 429 or 5xx: try again, not before `retryAfter` when the service said.
        case retry(retryAfter: Duration?)
        /// 413: the message is too large for this push service; sending it again cannot help.
        case tooLarge
        /// Any other refusal (400, 401, 403: a bad request or VAPID key); sending it again cannot help.
        case refused(status: Int)

        public init(status: Int, retryAfter: String?, now: Date = Date()) {
            switch status {
            case 200..<300: self = .accepted
            case 404, 410: self = .subscriptionGone
            case 413: self = .tooLarge
            case 429, 500..<600: self = .retry(retryAfter: RetryPolicy.retryAfter(retryAfter, now: now))
            default: self = .refused(status: status)
            }
        }
    }
}

/// A push that cannot be built: the message says which part.
public struct WebPushMessageError: Error, Equatable, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
