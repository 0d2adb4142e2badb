import Foundation
import MatchcastCore

/// One Live Activity of one device, with its lifecycle state machine as last persisted.
///
/// `activityId` and `matchId` repeat the lifecycle's own; a store refuses a record where they
/// differ (`StoreError.invalid`), since pushes would go to the wrong activity.
public struct ActivityRecord: Sendable, Hashable, Codable {
    public var activityId: String
    public var deviceId: String
    public var matchId: String
    public var environment: APNsEnvironment
    public var lifecycle: ActivityLifecycle
    public var updatedAt: Date

    public init(
        activityId: String, deviceId: String, matchId: String, environment: APNsEnvironment,
        lifecycle: ActivityLifecycle, updatedAt: Date
    ) {
        self.activityId = activityId
        self.deviceId = deviceId
        self.matchId = matchId
        self.environment = environment
        self.lifecycle = lifecycle
        self.updatedAt = updatedAt
    }

    /// A record whose ids are taken from the lifecycle.
    public init(deviceId: String, environment: APNsEnvironment, lifecycle: ActivityLifecycle, updatedAt: Date) {
        self.init(
            activityId: lifecycle.activityId, deviceId: deviceId, matchId: lifecycle.matchId,
            environment: environment, lifecycle: lifecycle, updatedAt: updatedAt)
    }

    /// The token APNs updates this activity through, once the app reported it.
    public var updateToken: String? { lifecycle.updateToken }

    public var phase: ActivityLifecycle.Phase { lifecycle.phase }

    /// Whether the activity still needs pushes (or an `end`): everything but `ended`.
    public var isOpen: Bool { phase != .ended }

    /// Throws when the record contradicts its own lifecycle.
    @inline(__always)  // a fan-out checks 100,000: inlined, the record is read in place rather than copied for the call
    func validate() throws(StoreError) {
        guard !activityId.isEmpty, !deviceId.isEmpty, !matchId.isEmpty,
              lifecycle.activityId == activityId, lifecycle.matchId == matchId
        else { throw invalidity }
    }

    /// What is wrong with a record that fails `validate()`.
    private var invalidity: StoreError {
        if activityId.isEmpty || deviceId.isEmpty || matchId.isEmpty { return .invalid("activity record with an empty id") }
        return .invalid("activity '\(activityId)' of match '\(matchId)' holds the lifecycle of activity "
            + "'\(lifecycle.activityId)' of match '\(lifecycle.matchId)'")
    }
}
