import Foundation

/// When an app first reported an update token, for its device's diagnostics: the token's age, and whether the app
/// reported for an activity a token it had before the activity began (one it kept from an ended activity). Written as
/// tokens are registered, first sighting kept; gone with the device, or after `keptFor`.
public struct UpdateTokenSighting: Sendable, Hashable {
    public var deviceId: String
    /// Whole: only ever shown redacted.
    public var token: String
    public var firstSeenAt: Date

    public init(deviceId: String, token: String, firstSeenAt: Date) {
        self.deviceId = deviceId
        self.token = token
        self.firstSeenAt = firstSeenAt
    }

    /// How long a sighting is kept: far longer than an activity lives (8 hours), so a token kept in the app from an
    /// earlier activity is still known when it comes back.
    public static let keptFor: Duration = .seconds(30 * 86_400)

    /// The oldest first sighting kept at `now`.
    public static func cutoff(at now: Date) -> Date {
        now.addingTimeInterval(-TimeInterval(keptFor.components.seconds))
    }
}
