import Foundation

/// Where an Android or web device's pushes go: its FCM registration token, or its browser's Web Push subscription.
///
/// Such a device has no push-to-start token and no per-activity update tokens: the broker starts, updates and ends
/// each of its activities by messages to this one address (start = the first message, end = a final one with a
/// dismissal). It is kept where an iOS device keeps its push-to-start token, in its stored form (`stored`): a prefix
/// that no hex token can carry, then the address. An activity started through it holds `activityToken(for:)` as its
/// update token: the address with the activity's id, since an update token is one open activity's alone.
public enum DirectAddress: Sendable, Hashable {
    /// An FCM registration token.
    case fcm(String)
    /// A subscription's JSON, `{"endpoint": …, "keys": {"p256dh": …, "auth": …}}`, as the API stored it.
    case webPush(String)

    private static let fcmPrefix = "fcm:"
    private static let webPushPrefix = "webpush:"
    /// Between the address and the activity id in an activity's update token. Activity ids never hold it.
    private static let activitySeparator: Character = "#"

    /// The address a stored token holds, or nil for an APNs token.
    public init?(stored: String) {
        if stored.utf8.starts(with: Self.fcmPrefix.utf8) {
            self = .fcm(String(stored.dropFirst(Self.fcmPrefix.count)))
        } else if stored.utf8.starts(with: Self.webPushPrefix.utf8) {
            self = .webPush(String(stored.dropFirst(Self.webPushPrefix.count)))
        } else {
            return nil
        }
    }

    /// How a store keeps it: in the push-to-start token's place.
    public var stored: String {
        switch self {
        case .fcm(let token): Self.fcmPrefix + token
        case .webPush(let subscription): Self.webPushPrefix + subscription
        }
    }

    /// Where a delivery to it goes.
    public var target: PushTarget {
        switch self {
        case .fcm(let token): PushTarget(kind: .fcmToken, value: token)
        case .webPush(let subscription): PushTarget(kind: .webPushSubscription, value: subscription)
        }
    }

    /// The update token of the activity `activityId` started through this address.
    public func activityToken(for activityId: String) -> String {
        stored + String(Self.activitySeparator) + activityId
    }

    /// Whether `token` (an update or push-to-start token as stored) is a direct address or an activity's token on one:
    /// a prefix check, cheap enough for every delivery of a fan-out.
    public static func isDirect(_ token: String) -> Bool {
        guard let first = token.utf8.first, first == UInt8(ascii: "f") || first == UInt8(ascii: "w") else { return false }
        return token.utf8.starts(with: fcmPrefix.utf8) || token.utf8.starts(with: webPushPrefix.utf8)
    }

    /// The same for a token as kept: asked of every activity a fan-out changes, so 64 hex digits (an APNs token, which
    /// no direct address is) are answered with no string made.
    public static func isDirect(_ token: CompactToken) -> Bool {
        !token.isHexDigits && isDirect(token.string)
    }

    /// The address an activity's update token (as kept) was made from, or nil for an APNs token.
    public init?(activityToken token: CompactToken) {
        guard !token.isHexDigits else { return nil }
        self.init(activityToken: token.string)
    }

    /// The address an activity's update token was made from (`activityToken(for:)`), or nil for an APNs token.
    public init?(activityToken token: String) {
        guard Self.isDirect(token), let separator = token.lastIndex(of: Self.activitySeparator) else { return nil }
        self.init(stored: String(token[..<separator]))
    }

    /// Whether `token` is an activity's token on this address.
    public func holds(activityToken token: String) -> Bool {
        DirectAddress(activityToken: token) == self
    }

    /// The address for logs and diagnostics: an FCM token with all but its first and last four characters hidden;
    /// a subscription as its push service's origin alone (the endpoint's path is the subscription's capability).
    public var redacted: String {
        switch self {
        case .fcm(let token):
            return "fcm:" + Redact.token(token)
        case .webPush(let subscription):
            let object = try? JSONSerialization.jsonObject(with: Data(subscription.utf8)) as? [String: Any]
            guard let endpoint = (object?["endpoint"] as? String).flatMap(URL.init(string:)), let scheme = endpoint.scheme,
                  let host = endpoint.host
            else { return "webpush:…" }
            return "webpush:\(scheme)://\(host)" + (endpoint.port.map { ":\($0)" } ?? "") + "/…"
        }
    }
}
