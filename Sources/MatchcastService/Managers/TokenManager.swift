import Foundation
import Logging
import MatchcastCore
import MatchcastStore

/// Push tokens: one push-to-start token per device (a new one replaces the old: tokens rotate),
/// one update token per activity (held by the lifecycle), each token belonging to exactly one
/// device or activity. Invalidation removes a token and ends what depended on it.
struct TokenManager: Sendable {
    let access: StoreAccess
    let router: MatchRouter
    let now: @Sendable () -> Date
    let logger: Logger

    func setPushToStartToken(deviceId: String, token: String, environment: APNsEnvironment) async throws(ServiceError) {
        let token = try Validation.token(token, field: "token")
        let record = PushToStartTokenRecord(deviceId: deviceId, token: token, environment: environment, updatedAt: now())
        try await access { try await $0.setPushToStartToken(record) }
        logger.info("push-to-start token set", metadata: ["device": "\(deviceId)", "token": "\(Redact.token(token))"])
        try await startAddressChanged(deviceId: deviceId)
    }

    /// An Android or web device's address (`DirectAddress`), kept in the place of a push-to-start token: it replaces
    /// the device's token or address, and a device that held the same address before loses it.
    func setDirectAddress(deviceId: String, _ address: DirectAddress) async throws(ServiceError) {
        // No environment: APNs is not where it goes.
        let record = PushToStartTokenRecord(deviceId: deviceId, token: address.stored, environment: .production, updatedAt: now())
        try await access { try await $0.setPushToStartToken(record) }
        logger.info("device address set", metadata: ["device": "\(deviceId)", "address": "\(address.redacted)"])
        try await startAddressChanged(deviceId: deviceId)
    }

    private func startAddressChanged(deviceId: String) async throws(ServiceError) {
        // Starts what waits for it; an Android or web device's started activities move to the new address.
        try await tellMatches(.pushToStartTokenChanged, deviceId: deviceId) { lifecycle, followed throws(ServiceError) in
            try await lifecycle.pushToStartTokenChanged(deviceId: deviceId, followed: followed)
        }
    }

    /// The environment of the device's push-to-start token, if it has one.
    func environment(deviceId: String) async throws(ServiceError) -> APNsEnvironment? {
        try await access { try await $0.pushToStartToken(deviceId: deviceId) }?.environment
    }

    /// A dead token (APNs 410/400, or a downstream service's feedback): true if anything used it.
    /// With `app`, a token of another app's device is left alone and reported unknown (an app's scoped admin key).
    func invalidate(_ token: String, reason: String, app: String? = nil) async throws(ServiceError) -> Bool {
        // An Android or web device's address comes as stored (`fcm:…`, `webpush:…`): its activities hold none of it.
        let token = DirectAddress.isDirect(token) ? token : try Validation.token(token, field: "token")
        if let app, let owner = try await access({ try await $0.pushToStartTokenHolder(token: token) }),
           !AppCatalog.device(owner, belongsTo: app) {
            return false
        }
        var endedActivity = false
        if let holder = try await access({ try await $0.activity(updateToken: token) }), holder.isOpen,
           app.map({ AppCatalog.device(holder.deviceId, belongsTo: $0) }) ?? true {
            _ = try await router.perform(MatchCommand(.invalidateUpdateToken, matchId: holder.matchId, token: token))
            endedActivity = true
            await recordRefusal(TokenRefusal(
                deviceId: holder.deviceId, kind: .update, token: token, activityId: holder.activityId, reason: reason, at: now()))
        }
        let device = try await access { try await $0.removePushToStartToken(token: token) }
        if let device {
            await recordRefusal(TokenRefusal(deviceId: device, kind: .pushToStart, token: token, reason: reason, at: now()))
            // A start that went to it never reached the device: that activity waits for the next token.
            try await tellMatches(.pushToStartTokenRejected, deviceId: device) { lifecycle, followed throws(ServiceError) in
                try await lifecycle.pushToStartTokenRejected(deviceId: device, followed: followed)
            }
        }
        let known = endedActivity || device != nil
        logger.notice("token invalidated", metadata: [
            "token": "\(Redact.token(token))", "reason": "\(reason.prefix(64))", "known": "\(known)",
        ])
        return known
    }

    /// Kept for the device's diagnostics; losing it to a store failure does not undo the invalidation.
    private func recordRefusal(_ refusal: TokenRefusal) async {
        do {
            try await access { try await $0.recordTokenRefusal(refusal) }
        } catch {
            logger.warning("token refusal not recorded", metadata: ["device": "\(refusal.deviceId)", "error": "\(error)"])
        }
    }

    /// A change to the device's push-to-start token: `here` tells this replica's lifecycle (the matches it runs),
    /// and `kind` is posted to the owners of the device's other followed matches (`MatchRouter.execute` runs it).
    /// With replicas the device's follows are read once, here, for both (`here` gets them); alone, the lifecycle
    /// reads them (`here` gets nil).
    private func tellMatches(
        _ kind: MatchCommand.Kind, deviceId: String,
        here: (LifecycleManager, _ followed: [String]?) async throws(ServiceError) -> Void
    ) async throws(ServiceError) {
        guard !router.ownership.isSolo else { return try await here(router.lifecycle, nil) }
        let followed = try await access({ try await $0.follows(deviceId: deviceId) }).map(\.matchId)
        try await here(router.lifecycle, followed)
        for matchId in followed where !router.ownership.holds(matchId) {
            try await router.post(MatchCommand(kind, matchId: matchId, deviceId: deviceId))
        }
    }
}
