import Foundation
import MatchcastCore
import MatchcastStore

extension LiveActivityService {
    /// Where the device's tokens and activities stand, and what needs attention (`DeviceDiagnostics`).
    /// With `app` (an app's scoped admin key), another app's device is not found.
    public func diagnostics(deviceId: String, app: String? = nil) async throws(ServiceError) -> DeviceDiagnostics {
        try Validation.identifier(deviceId, field: "deviceId")
        if let app, !AppCatalog.device(deviceId, belongsTo: app) { throw ServiceError(.notFound, "no device '\(deviceId)'") }
        // Tokens registered here since the last tick are noted first, so their ages show.
        await lifecycle.flushSightings()
        do {
            guard let device = try await store.device(id: deviceId) else {
                throw ServiceError(.notFound, "no device '\(deviceId)'")
            }
            let activities = try await store.activities(deviceId: deviceId)
            var matches: [MatchRecord] = []
            for matchId in Set(activities.filter(\.isOpen).map(\.matchId)).sorted() {
                if let match = try await store.match(id: matchId) { matches.append(match) }
            }
            return DeviceDiagnostics(
                device: device, token: try await store.pushToStartToken(deviceId: deviceId),
                follows: try await store.follows(deviceId: deviceId), activities: activities,
                refusals: try await store.tokenRefusals(deviceId: deviceId),
                sightings: try await store.updateTokenSightings(deviceId: deviceId), matches: matches,
                ceiling: lifecycle.settings.activityPolicy.highPriorityPerHour,
                lastAnswer: { [dispatcher = lifecycle.relay.dispatcher] token in
                    // An Android or web address (or an activity's token on one) is known to its sink by what it sends to.
                    let sent = DirectAddress(stored: token) ?? DirectAddress(activityToken: token)
                    return dispatcher.lastAnswer(token: sent?.target.value ?? token)
                },
                now: currentDate())
        } catch let error as ServiceError {
            throw error
        } catch {
            throw ServiceError(.unavailable, "reading the device's diagnostics: \(error)")
        }
    }
}
