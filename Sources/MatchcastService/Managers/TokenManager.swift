import Foundation
import Logging
import MatchcastCore
import MatchcastStore

/// Push tokens: one push-to-start token per device (a new one replaces the old: tokens rotate),
/// one update token per activity (held by the lifecycle), each token belonging to exactly one
/// device or activity. Invalidation removes a token and ends what depended on it.
struct TokenManager: Sendable {
    let access: StoreAccess
    let lifecycle: LifecycleManager
    let now: @Sendable () -> Date
    let logger: Logger

    func setPushToStartToken(deviceId: String, token: String, environment: APNsEnvironment) async throws(ServiceError) {
        let token = try Validation.token(token, field: "token")
        let record = PushToStartTokenRecord(deviceId: deviceId, token: token, environment: environment, updatedAt: now())
        try await access { try await $0.setPushToStartToken(record) }
        logger.info("push-to-start token set", metadata: ["device": "\(deviceId)", "token": "\(Redact.token(token))"])
        try await lifecycle.pushToStartTokenChanged(deviceId: deviceId)
    }

    /// The environment of the device's push-to-start token, if it has one.
    func environment(deviceId: String) async throws(ServiceError) -> APNsEnvironment? {
        try await access { try await $0.pushToStartToken(deviceId: deviceId) }?.environment
    }

    /// A dead token (APNs 410/400, or a downstream service's feedback): true if anything used it.
    func invalidate(_ token: String, reason: String) async throws(ServiceError) -> Bool {
        let token = try Validation.token(token, field: "token")
        let endedActivity = try await lifecycle.invalidate(updateToken: token)
        let device = try await access { try await $0.removePushToStartToken(token: token) }
        let known = endedActivity || device != nil
        logger.notice("token invalidated", metadata: [
            "token": "\(Redact.token(token))", "reason": "\(reason.prefix(64))", "known": "\(known)",
        ])
        return known
    }
}
