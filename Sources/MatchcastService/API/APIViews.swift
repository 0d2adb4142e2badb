import Foundation
import MatchcastCore
import MatchcastFeeds
import MatchcastStore

/// `POST /v1/devices`: the new device and its secret, shown once.
public struct DeviceRegistration: Sendable, Hashable, Codable {
    public var deviceId: String
    /// `<deviceId>.<random>`: identifies and authenticates the device; only its hash is stored.
    public var deviceSecret: String
}

/// One follow, as `GET /v1/devices/{id}/follows` lists it for the app to sync.
public struct FollowView: Sendable, Hashable, Codable {
    public var matchId: String
    public var followedAt: Date
    /// The open activity for this follow, if any, and where it stands.
    public var activityId: String?
    public var activityState: String?
}

/// An activity as `PUT /v1/activities/{id}` returns it.
public struct ActivityView: Sendable, Hashable, Codable {
    public var activityId: String
    public var deviceId: String
    public var matchId: String
    public var state: String
}

/// A match as the broker sees it (`GET /v1/matches`).
public struct MatchView: Sendable, Hashable, Codable {
    public var id: String
    public var sport: Sport
    public var status: MatchStatus
    public var home: Team
    public var away: Team
    public var updatedAt: Date?
    /// Exactly what an update delivery would carry now.
    public var contentState: ContentState?
    /// The match's open broadcast channel (iOS 18 channel mode), for an app that starts its own
    /// activity with `pushType: .channel(id)`; absent when the match goes per token.
    public var channelId: String?
}

/// What `/readyz` reports.
public struct Readiness: Sendable, Hashable, Codable {
    public var store: Bool
    /// Each feed by name (`FeedSpec.publicName`): whether it answered lately.
    public var feeds: [String: Bool] = [:]
    /// Whether every sink reaches its destination. Shown, but not part of `ready`: an unreachable APNs does not
    /// stop the API from serving devices (the outbox keeps what it cannot send), and taking every replica out of
    /// rotation would not bring APNs back.
    public var sinks: Bool = true
    /// Each provider of a failover group, best first: shown, not part of `ready` (the group's own feed entry is false
    /// only when no provider answers).
    public var providers: [ProviderStatus] = []
    /// Every feed answered lately.
    public var feed: Bool { feeds.values.allSatisfy { $0 } }
    public var ready: Bool { store && feed }
}
