import Foundation

/// A follow with the waiting activity it brings, if it brings one (`MatchcastStore.addFollows`).
public struct NewFollow: Sendable, Hashable {
    public var follow: FollowRecord
    /// Nil when the device already has an open activity for the match.
    public var activity: ActivityRecord?

    public init(follow: FollowRecord, activity: ActivityRecord?) {
        self.follow = follow
        self.activity = activity
    }
}

extension MatchcastStore {
    /// Each follow as `addFollow`, then their activities as `saveActivity` (`saveActivities` for several): for stores
    /// whose calls each commit on their own. On error the earlier follows may be saved; a retry saves nothing twice.
    public func addFollows(_ follows: [NewFollow]) async throws(StoreError) -> [Date] {
        let activities = follows.compactMap(\.activity)
        // The activities first: a follow whose device is gone is refused there, before any follow row is written.
        if activities.count == 1 {
            try await saveActivity(activities[0])
        } else if !activities.isEmpty {
            try await saveActivities(activities)
        }
        var followedAt: [Date] = []
        followedAt.reserveCapacity(follows.count)
        for item in follows {
            let follow = item.follow
            if try await addFollow(follow) {
                followedAt.append(follow.createdAt)
            } else {
                let stored = try await self.follows(deviceId: follow.deviceId).first { $0.matchId == follow.matchId }
                followedAt.append(stored?.createdAt ?? follow.createdAt)
            }
        }
        return followedAt
    }
}
