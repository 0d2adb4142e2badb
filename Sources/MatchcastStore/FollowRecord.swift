import Foundation

/// A device follows a match: it gets a Live Activity for it while the match is in progress.
public struct FollowRecord: Sendable, Hashable, Codable {
    public var deviceId: String
    public var matchId: String
    public var createdAt: Date

    public init(deviceId: String, matchId: String, createdAt: Date) {
        self.deviceId = deviceId
        self.matchId = matchId
        self.createdAt = createdAt
    }
}
