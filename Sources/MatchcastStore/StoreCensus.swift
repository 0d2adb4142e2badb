import MatchcastCore

/// Counts of what a store holds, for the broker's gauges.
public struct StoreCensus: Sendable, Hashable {
    public var devices: Int
    public var follows: Int
    /// iOS devices' push-to-start tokens.
    public var pushToStartTokens: Int
    /// Update tokens of open activities on iPhones (an Android or web device's activities hold their device's address,
    /// counted in `fcmTokens` and `webPushSubscriptions` by device).
    public var updateTokens: Int
    /// Android devices' FCM tokens and browsers' Web Push subscriptions, kept where push-to-start tokens are
    /// (`DirectAddress`).
    public var fcmTokens: Int
    public var webPushSubscriptions: Int

    public init(
        devices: Int, follows: Int, pushToStartTokens: Int, updateTokens: Int, fcmTokens: Int = 0, webPushSubscriptions: Int = 0
    ) {
        self.devices = devices
        self.follows = follows
        self.pushToStartTokens = pushToStartTokens
        self.updateTokens = updateTokens
        self.fcmTokens = fcmTokens
        self.webPushSubscriptions = webPushSubscriptions
    }

    /// Which count a device's push-to-start token or address falls in.
    enum AddressKind: CaseIterable {
        case pushToStart, fcm, webPush

        init(_ stored: String) {
            switch DirectAddress(stored: stored) {
            case nil: self = .pushToStart
            case .fcm?: self = .fcm
            case .webPush?: self = .webPush
            }
        }
    }
}
