import Foundation
import MatchcastCore
import MatchcastStore

/// Who follows what: follow and unfollow (both idempotent) and the list the app syncs from.
/// A follow is saved by the lifecycle with its waiting activity; an unfollow ends it.
struct FollowManager: Sendable {
    let access: StoreAccess
    let router: MatchRouter
    let now: @Sendable () -> Date

    /// Saved with the waiting activity it brings by the lifecycle running the match (`LifecycleManager.following`),
    /// in one store write with the other follows queued with it.
    func follow(deviceId: String, matchId: String) async throws(ServiceError) -> FollowView {
        try Validation.identifier(matchId, field: "matchId")
        // No environment: the lifecycle takes the device's push-to-start token's, read with the batch's tokens.
        let command = MatchCommand(.follow, matchId: matchId, deviceId: deviceId)
        let routed = try await router.route(command) { lifecycle throws(ServiceError) in
            try await lifecycle.following(deviceId: deviceId, matchId: matchId, environment: nil)
        }
        let activity: ActivityRecord?
        let followedAt: Date?
        switch routed {
        case .here(let following):
            (activity, followedAt) = (following.activity, following.followedAt)
        case .byOwner:
            activity = try await access { try await $0.activities(deviceId: deviceId) }
                .first { $0.matchId == matchId && $0.isOpen }
            followedAt = try await access { try await $0.follows(deviceId: deviceId) }.first { $0.matchId == matchId }?.createdAt
        }
        return FollowView(matchId: matchId, followedAt: followedAt ?? now(),
                          activityId: activity?.activityId, activityState: activity?.phase.rawValue)
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
