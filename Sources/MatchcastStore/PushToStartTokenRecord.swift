import Foundation
import MatchcastCore

/// A device's current push-to-start token. A device has at most one, and a token belongs to at
/// most one device.
public struct PushToStartTokenRecord: Sendable, Hashable, Codable {
    public var deviceId: String
    /// Hex token as the app reported it.
    public var token: String
    public var environment: APNsEnvironment
    public var updatedAt: Date

    public init(deviceId: String, token: String, environment: APNsEnvironment, updatedAt: Date) {
        self.deviceId = deviceId
        self.token = token
        self.environment = environment
        self.updatedAt = updatedAt
    }
}
