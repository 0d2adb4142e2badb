import Foundation
import MatchcastCore

/// One Live Activity of one device, with its lifecycle state machine as last persisted.
///
/// Its activity and match ids are its lifecycle's: kept once, since a store and the lifecycle manager's cache each
/// hold a record per open activity (a million in a big deployment).
public struct ActivityRecord: Sendable, Hashable {
    public var deviceId: String
    public var lifecycle: ActivityLifecycle
    public var environment: APNsEnvironment
    public var updatedAt: Date

    public init(deviceId: String, environment: APNsEnvironment, lifecycle: ActivityLifecycle, updatedAt: Date) {
        self.deviceId = deviceId
        self.lifecycle = lifecycle
        self.environment = environment
        self.updatedAt = updatedAt
    }

    public var activityId: String { lifecycle.activityId }
    public var matchId: String { lifecycle.matchId }

    /// The token APNs updates this activity through, once the app reported it.
    public var updateToken: String? { lifecycle.updateToken }

    public var phase: ActivityLifecycle.Phase { lifecycle.phase }

    /// Whether the activity still needs pushes (or an `end`): everything but `ended`.
    public var isOpen: Bool { phase != .ended }

    /// Throws when the record has an empty id.
    @inline(__always)  // a fan-out checks 100,000: inlined, the record is read in place rather than copied for the call
    func validate() throws(StoreError) {
        guard !activityId.isEmpty, !deviceId.isEmpty, !matchId.isEmpty else {
            throw .invalid("activity record with an empty id")
        }
    }
}
