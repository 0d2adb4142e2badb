import Foundation
import MatchcastCore
import MatchcastStore

/// Who follows what: follow and unfollow (both idempotent) and the list the app syncs from.
/// A follow hands the lifecycle a waiting activity; an unfollow ends it.
struct FollowManager: Sendable {
    let access: StoreAccess
    let router: MatchRouter
    let now: @Sendable () -> Date

    /// True when the follow is new.
    @discardableResult
    func follow(deviceId: String, matchId: String, environment: APNsEnvironment) async throws(ServiceError) -> (FollowView, created: Bool) {
        try Validation.identifier(matchId, field: "matchId")
        let record = FollowRecord(deviceId: deviceId, matchId: matchId, createdAt: now())
        let created = try await access { try await $0.addFollow(record) }
        let activity: ActivityRecord?
        switch try await router.perform(MatchCommand(.follow, matchId: matchId, deviceId: deviceId, environment: environment)) {
        case .here(let record): activity = record
        case .byOwner:
            activity = try await access { try await $0.activities(deviceId: deviceId) }
                .first { $0.matchId == matchId && $0.isOpen }
        }
        // A new follow was made just now; a repeat keeps the time it was first made.
        let followedAt = created
            ? record.createdAt
            : try await access { try await $0.follows(deviceId: deviceId) }.first { $0.matchId == matchId }?.createdAt
        let view = FollowView(matchId: matchId, followedAt: followedAt ?? now(),
                              activityId: activity?.activityId, activityState: activity?.phase.rawValue)
        return (view, created)
    }

    /// Records the follow only (an adopted activity implies one); true when it is new.
    func ensureFollow(deviceId: String, matchId: String) async throws(ServiceError) -> Bool {
        let record = FollowRecord(deviceId: deviceId, matchId: matchId, createdAt: now())
        return try await access { try await $0.addFollow(record) }
    }

    func unfollow(deviceId: String, matchId: String) async throws(ServiceError) {
        try Validation.identifier(matchId, field: "matchId")
        _ = try await access { try await $0.removeFollow(deviceId: deviceId, matchId: matchId) }
        _ = try await router.perform(MatchCommand(.unfollow, matchId: matchId, deviceId: deviceId))
    }

    func follows(deviceId: String) async throws(ServiceError) -> [FollowView] {
        let follows = try await access { try await $0.follows(deviceId: deviceId) }
        let open = try await access { try await $0.activities(deviceId: deviceId) }.filter(\.isOpen)
        return follows.map { follow in
            let activity = open.first { $0.matchId == follow.matchId }
            return FollowView(matchId: follow.matchId, followedAt: follow.createdAt,
                              activityId: activity?.activityId, activityState: activity?.phase.rawValue)
        }
    }
}
