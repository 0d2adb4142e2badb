import Foundation

/// APNs (or a downstream service's feedback) refused one of a device's tokens as dead: kept per device, newest
/// first, the last `TokenRefusal.keptPerDevice` of them, for the device's diagnostics. A token is refused once: it
/// is forgotten (a push-to-start token) or its activity ends (an update token) when the refusal is recorded.
public struct TokenRefusal: Sendable, Hashable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case pushToStart
        case update
    }

    public var deviceId: String
    public var kind: Kind
    /// The refused token (shown redacted).
    public var token: String
    /// The activity an update token belonged to.
    public var activityId: String?
    /// Why, as APNs or the reporter said it (`Unregistered`, `BadDeviceToken`, ...), at most `maxReasonLength`.
    public var reason: String
    public var at: Date

    public init(deviceId: String, kind: Kind, token: String, activityId: String? = nil, reason: String, at: Date) {
        self.deviceId = deviceId
        self.kind = kind
        self.token = token
        self.activityId = activityId
        self.reason = String(reason.prefix(Self.maxReasonLength))
        self.at = at
    }

    public static let maxReasonLength = 128
    /// How many of a device's refusals are kept; older ones are dropped as new ones come.
    public static let keptPerDevice = 20
}
