/// Where one delivery goes: an activity's update token, a device's push-to-start token or a broadcast channel (APNs),
/// an Android device's FCM registration token, or a browser's Web Push subscription.
public struct PushTarget: Sendable, Hashable, Codable {
    /// The kind of address.
    public enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        case updateToken
        case pushToStartToken
        case channel
        /// An FCM registration token (`DirectAddress.fcm`): every message of the device's activities goes to it.
        case fcmToken
        /// A Web Push subscription as the browser's `PushSubscription.toJSON()` gives it (`DirectAddress.webPush`).
        case webPushSubscription

        /// Whether APNs is where deliveries of this kind go.
        public var isAPNs: Bool {
            switch self {
            case .updateToken, .pushToStartToken, .channel: true
            case .fcmToken, .webPushSubscription: false
            }
        }
    }

    /// The address as kept: an APNs token's 64 hex digits in their 32 bytes, anything else as its string. A fan-out
    /// hands the activity's update token to its delivery as it is, and a sink writes it out from here
    /// (`CompactToken.appendJSONString`, `withUTF8`) without making a string per delivery.
    public var token: CompactToken

    /// After `token`, so that its byte takes the room after the token's 33 rather than a word of its own.
    public var kind: Kind

    /// A hex token, a channel id, an FCM registration token, or a subscription's JSON. Made from the digits on each
    /// read of a hex token: compare and write out `token` where a string is not needed.
    public var value: String {
        get { token.string }
        set { token = CompactToken(newValue) }
    }

    public init(kind: Kind, value: String) {
        self.init(kind: kind, token: CompactToken(value))
    }

    public init(kind: Kind, token: CompactToken) {
        self.kind = kind
        self.token = token
    }

    private enum CodingKeys: String, CodingKey {
        case kind, value
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(kind: try container.decode(Kind.self, forKey: .kind), value: try container.decode(String.self, forKey: .value))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        try container.encode(value, forKey: .value)
    }

    /// The value with all but its first and last four characters hidden, for logs.
    public var redacted: String { Redact.token(value) }
}

/// Hides secrets in logs: tokens and keys never appear whole.
public enum Redact {
    /// `"80a1…9f3c"` for a long token; short values are hidden entirely.
    public static func token(_ value: String) -> String {
        value.count <= 12 ? "…" : "\(value.prefix(4))…\(value.suffix(4))"
    }
}
