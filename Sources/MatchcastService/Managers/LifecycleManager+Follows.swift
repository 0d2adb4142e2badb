import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastStore

// Follows and unfollows: queued behind their match's gate and run together (`GateQueue`), saved with their new
// waiting activities in one store call.
extension LifecycleManager {
    /// A follow: a waiting activity for (device, match), unless one is already open. It starts by
    /// push-to-start as soon as the match is in progress and the device has a token.
    /// `environment` nil: that of the device's push-to-start token, production without one.
    @discardableResult
    public func follow(
        deviceId: String, matchId: String, environment: APNsEnvironment? = nil
    ) async throws(ServiceError) -> ActivityRecord {
        try await following(deviceId: deviceId, matchId: matchId, environment: environment).activity
    }

    /// `follow`, which also saves the follow itself (idempotent): the activity, and when the device first followed.
    ///
    /// Follows that arrive while the match's gate is held queue up (`GateQueue`); the first through it runs them all.
    public func following(
        deviceId: String, matchId: String, environment: APNsEnvironment?
    ) async throws(ServiceError) -> Following {
        let ticket = followQueue.add(QueuedFollow(deviceId: deviceId, matchId: matchId, environment: environment))
        await gates.enter(matchId)
        defer { gates.leave(matchId) }
        if let outcome = followQueue.outcome(ticket) { return try outcome.get() }
        await runFollows(followQueue.takeAll(matchId: matchId), matchId: matchId)
        guard let outcome = followQueue.outcome(ticket) else {
            throw ServiceError(.unavailable, "the follow of \(matchId) was not run; retry")
        }
        return try outcome.get()
    }

    /// Follow rows with their new activities saved in one store call (`addFollows`), or one by one when that fails
    /// (so one bad follow fails alone): for each, when the device first followed, or why it was not saved.
    nonisolated func addFollows(_ follows: [NewFollow]) async -> [Result<Date, ServiceError>] {
        do {
            let dates = try await persist { try await self.store.addFollows(follows) }
            return zip(follows, dates).map { .success($1) }
        } catch {
            guard follows.count > 1 else { return [.failure(error)] }
            var outcomes: [Result<Date, ServiceError>] = []
            for follow in follows {
                do {
                    let dates = try await persist { try await self.store.addFollows([follow]) }
                    outcomes.append(.success(dates.first ?? follow.follow.createdAt))
                } catch {
                    outcomes.append(.failure(error))
                }
            }
            return outcomes
        }
    }

    /// Follows waiting for their match's gate (tests).
    package var queuedFollowCount: Int { followQueue.count }

    /// Queued follows of one match. The devices' push-to-start tokens are read at once (a new activity's environment,
    /// and whether it may start); the follows with their new waiting activities are saved in one write (one by one
    /// when that fails, so a bad one fails alone); then those that may start do, their starts saved and sent together.
    func runFollows(_ requests: [GateQueue<QueuedFollow, Following>.Request], matchId: String) async {
        func failAll(_ error: ServiceError) {
            for request in requests { followQueue.settle(request.ticket, .failure(error)) }
        }
        do {
            try await loadActivities(matchId: matchId)
        } catch {
            return failAll(error)
        }
        let latest = latest(matchId: matchId)
        // One entry per device: a repeat in the batch is answered with the first's outcome.
        var entries: [QueuedFollow] = []
        var position: [String: Int] = [:]  // device id → its entry
        var tickets: [[Int]] = []  // by entry: the follows it answers
        for request in requests {
            if let at = position[request.deviceId] {
                tickets[at].append(request.ticket)
            } else {
                position[request.deviceId] = entries.count
                entries.append(request.command)
                tickets.append([request.ticket])
            }
        }
        // Those with no open activity get a new one: its environment, and whether it may start, are their devices'
        // push-to-start tokens'.
        let newDevices = entries.filter { matches[matchId]?.cache?.openActivityId(deviceId: $0.deviceId) == nil }
        let isNew = Set(newDevices.map(\.deviceId))
        var tokens: [String: PushToStartTokenRecord] = [:]
        if !newDevices.isEmpty, latest != nil || newDevices.contains(where: { $0.environment == nil }) {
            do {
                let devices = Array(isNew)
                tokens = try await persist { try await self.store.pushToStartTokens(deviceIds: devices) }
            } catch {
                return failAll(error)
            }
        }
        let follows = entries.map { entry in
            var activity: ActivityRecord?
            if isNew.contains(entry.deviceId) {
                let lifecycle = ActivityLifecycle(activityId: builder.makeActivityId(now: now()), matchId: matchId)
                let environment = entry.environment ?? tokens[entry.deviceId]?.environment ?? .production
                activity = ActivityRecord(
                    deviceId: entry.deviceId, environment: environment, lifecycle: lifecycle, updatedAt: now())
            }
            return NewFollow(follow: FollowRecord(deviceId: entry.deviceId, matchId: matchId, createdAt: now()), activity: activity)
        }
        let added = await addFollows(follows)
        var saved: [ActivityRecord] = []
        for (follow, outcome) in zip(follows, added) {
            if case .success = outcome, let activity = follow.activity {
                matches[matchId]?.cache?.put(activity)
                saved.append(activity)
            }
        }
        var failure: ServiceError?
        if let latest, !saved.isEmpty, var cache = matches[matchId]?.cache.take() {
            // Started in place, as a kick-off starts them, with the tokens read above.
            let moment = now()
            let tokenOf = tokens.mapValues(\.token)
            var deliveries: [Delivery] = []
            var changed = ChangeSet(capacity: saved.count)
            for record in saved {
                guard let slot = cache.slot(id: record.activityId) else { continue }
                start(&cache, at: slot, to: latest, now: moment, tokens: tokenOf, into: &deliveries, changed: &changed)
            }
            matches[matchId]?.cache = consume cache
            do {
                try await finish(deliveries, changed)
            } catch {
                // The activities are saved and wait; the cache, ahead of the store, is read again, and the next tick
                // starts them. Their follows report the failure.
                fanOutFailed(matchId)
                failure = error
            }
        }
        for (at, follow) in follows.enumerated() {
            let outcome: Result<Following, ServiceError>
            switch added[at] {
            case .failure(let error):
                outcome = .failure(error)
            case .success(let followedAt):
                let activityId = follow.activity?.activityId ?? matches[matchId]?.cache?.openActivityId(deviceId: follow.follow.deviceId)
                if follow.activity != nil, let failure {
                    outcome = .failure(failure)
                } else if let activityId, let activity = matches[matchId]?.cache?[activityId] ?? follow.activity {
                    outcome = .success(Following(activity: activity, followedAt: followedAt))
                } else {
                    outcome = .failure(ServiceError(.unavailable, "the activity of the follow of \(matchId) was not kept; retry"))
                }
            }
            for ticket in tickets[at] { followQueue.settle(ticket, outcome) }
        }
    }

    /// Unfollow: the device's open activity for the match ends at once.
    public func unfollow(deviceId: String, matchId: String) async throws(ServiceError) {
        await gates.enter(matchId)
        defer { gates.leave(matchId) }
        try await loadActivities(matchId: matchId)
        for record in matches[matchId]?.cache?.records(deviceId: deviceId) ?? [] {
            try await end(record, reason: .unfollowed)
        }
    }
}
