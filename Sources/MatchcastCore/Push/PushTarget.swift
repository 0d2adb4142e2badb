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

    public var kind: Kind
    /// A hex token, a channel id, an FCM registration token, or a subscription's JSON.
    public var value: String

    public init(kind: Kind, value: String) {
        self.kind = kind
        self.value = value
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
