import Foundation
import Logging
import MatchcastStore

/// Runs a change to a match's activities on the replica that runs the match. Solo, or when this replica holds the
/// match's lease, or can claim it (then it takes the match first): here, on `LifecycleManager`. When another
/// replica holds it: the command is posted to the store's inbox (`NOTIFY` wakes the owner's `CommandInbox`), and
/// the call waits, up to `answerTimeout`, for the owner to have done it, so the API answers as if it were local.
struct MatchRouter: Sendable {
    let lifecycle: LifecycleManager
    let ownership: MatchOwnership
    /// Called with the match this replica just gained, so the poll supervisor starts polling it if it is followed.
    let gained: @Sendable (String) -> Void
    let answerTimeout: Duration
    /// What `answerTimeout` and the waits between looks at the owner's answer are measured on.
    let clock: any Clock<Duration>
    let logger: Logger

    /// What `route` did.
    enum Routed<Value: Sendable>: Sendable {
        /// Run here, with what `here` answered.
        case here(Value)
        /// Run by the replica that owns the match (read the result from the store).
        case byOwner
    }

    /// What `perform` did: run here, with the activity the command made or changed when it names one, or by the owner.
    typealias Outcome = Routed<ActivityRecord?>

    func perform(_ command: MatchCommand) async throws(ServiceError) -> Outcome {
        try await route(command) { _ throws(ServiceError) in try await execute(command) }
    }

    /// The command run here by `here` (on this replica's lifecycle), or posted to the match's owner as `perform` does.
    func route<Value: Sendable>(
        _ command: MatchCommand, here: (LifecycleManager) async throws(ServiceError) -> Value
    ) async throws(ServiceError) -> Routed<Value> {
        guard let shared = ownership.shared else { return .here(try await here(lifecycle)) }
        if try await runsHere(command.matchId) { return .here(try await here(lifecycle)) }
        let store = shared.store
        let id = try await access(store) { try await $0.postCommand(command) }
        logger.debug("command posted to the match's owner", metadata: [
            "match": "\(command.matchId)", "command": "\(command.kind.rawValue)", "id": "\(id)",
        ])
        if try await answered(id, store: store) { return .byOwner }
        throw ServiceError(.unavailable, "the replica running match \(command.matchId) has not answered yet; the change is queued, retry to see it")
    }

    /// Looks for the owner's outcome of posted command `id`, then again after each wait of 25 ms on `clock` until
    /// the waits add up to `answerTimeout`: true once done, thrown when the owner refused it, false when it has not
    /// answered in time.
    private func answered(_ id: Int64, store: any ReplicaStore) async throws(ServiceError) -> Bool {
        let step = Duration.milliseconds(25)
        var waited = Duration.zero
        while true {
            if let outcome = try await access(store, { try await $0.commandOutcome(id: id) }) {
                try? await store.forgetCommand(id: id)
                if let refusal = outcome.refusal {
                    throw ServiceError(ServiceError.Code(rawValue: refusal.code) ?? .unavailable, refusal.message)
                }
                return true
            }
            guard waited < answerTimeout else { return false }
            try? await clock.sleep(for: step)
            waited += step
        }
    }

    /// Posts without waiting (a push-to-start token for the matches other replicas run).
    func post(_ command: MatchCommand) async throws(ServiceError) {
        guard let shared = ownership.shared else { return }
        _ = try await access(shared.store) { try await $0.postCommand(command) }
    }

    /// True when this replica runs the match now (claiming it if it was free).
    func runsHere(_ matchId: String) async throws(ServiceError) -> Bool {
        if ownership.holds(matchId) { return true }
        let claim: MatchOwnership.Claim
        do {
            claim = try await ownership.claim(matchId)
        } catch {
            throw ServiceError(.unavailable, "storage is unavailable (\(error.reason))")
        }
        switch claim {
        case .held: return true
        case .elsewhere: return false
        case .gained(let takenOver):
            logger.info(takenOver ? "match taken over" : "match lease acquired", metadata: ["match": "\(matchId)"])
            try await lifecycle.take(matchId: matchId)
            gained(matchId)
            return true
        }
    }

    /// The command, on this replica's lifecycle.
    @discardableResult
    func execute(_ command: MatchCommand) async throws(ServiceError) -> ActivityRecord? {
        func required(_ value: String?, _ name: String) throws(ServiceError) -> String {
            guard let value else { throw ServiceError(.invalidRequest, "\(command.kind.rawValue) command without \(name)") }
            return value
        }
        switch command.kind {
        case .follow:
            return try await lifecycle.follow(
                deviceId: try required(command.deviceId, "deviceId"), matchId: command.matchId,
                environment: command.environment)
        case .unfollow:
            try await lifecycle.unfollow(deviceId: try required(command.deviceId, "deviceId"), matchId: command.matchId)
            return nil
        case .registerUpdateToken:
            return try await lifecycle.registerUpdateToken(
                activityId: try required(command.activityId, "activityId"),
                deviceId: try required(command.deviceId, "deviceId"), matchId: command.matchId,
                token: try required(command.token, "token"), environment: command.environment ?? .production)
        case .dismiss:
            try await lifecycle.dismiss(
                activityId: try required(command.activityId, "activityId"), deviceId: try required(command.deviceId, "deviceId"))
            return nil
        case .invalidateUpdateToken:
            try await lifecycle.invalidate(updateToken: try required(command.token, "token"))
            return nil
        case .pushToStartTokenChanged:
            try await lifecycle.pushToStartTokenChanged(deviceId: try required(command.deviceId, "deviceId"))
            return nil
        case .pushToStartTokenRejected:
            try await lifecycle.pushToStartTokenRejected(deviceId: try required(command.deviceId, "deviceId"))
            return nil
        }
    }

    /// Store calls fail as every service store call does (`StoreAccess`).
    private func access<T: Sendable>(
        _ store: any ReplicaStore, _ operation: @Sendable (any ReplicaStore) async throws -> T
    ) async throws(ServiceError) -> T {
        let access = StoreAccess(store: store, logger: logger)
        return try await access { _ in try await operation(store) }
    }
}
