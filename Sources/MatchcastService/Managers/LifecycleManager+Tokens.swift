import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastStore

// Update tokens reported by the apps: queued behind their match's gate and registered together.
extension LifecycleManager {
    /// The app reported the update token of an activity: the one the broker started, or one it
    /// started itself (adopted; any other open activity of that device for the match is replaced).
    ///
    /// Tokens reported while the match's gate is held queue up (`GateQueue`); the first through it registers them all.
    public func registerUpdateToken(
        activityId: String, deviceId: String, matchId: String, token: String, environment: APNsEnvironment
    ) async throws(ServiceError) -> ActivityRecord {
        let ticket = tokenQueue.add(QueuedToken(
            activityId: activityId, deviceId: deviceId, matchId: matchId, token: token, environment: environment))
        await gates.enter(matchId)
        defer { gates.leave(matchId) }
        if let outcome = tokenQueue.outcome(ticket) { return try outcome.get() }
        await runTokens(tokenQueue.takeAll(matchId: matchId))
        guard let outcome = tokenQueue.outcome(ticket) else {
            throw ServiceError(.unavailable, "the update token of \(activityId) was not registered; retry")
        }
        return try outcome.get()
    }

    /// Update tokens waiting for their match's gate (tests).
    package var queuedTokenCount: Int { tokenQueue.count }

    /// Queued update tokens of one match, registered together (`registerTogether`); when that fails as a whole, each
    /// again alone, from the store's state, so a bad one fails alone with its own error.
    func runTokens(_ requests: [GateQueue<QueuedToken, ActivityRecord>.Request]) async {
        let together = await registerTogether(requests.map(\.command))
        if case .success(let outcomes) = together {
            for (request, outcome) in zip(requests, outcomes) { tokenQueue.settle(request.ticket, outcome) }
            return
        }
        if case .failure(let error) = together, requests.count == 1 {
            tokenQueue.settle(requests[0].ticket, .failure(error))
            return
        }
        for request in requests {
            switch await registerTogether([request.command]) {
            case .success(let outcomes): tokenQueue.settle(request.ticket, outcomes[0])
            case .failure(let error): tokenQueue.settle(request.ticket, .failure(error))
            }
        }
    }

    /// Registers the tokens in order, each as `registerUpdateToken` says and seeing what the earlier ones did (a
    /// conflict, or nothing new), their holders read in one store call and their changes saved and sent in one
    /// `finish`: the outcome of each. A token refused (conflict, forbidden) fails alone before it changes anything.
    /// The batch fails as a whole when the read or the save fails, or a token fails after changing activities;
    /// the caches it touched are then dropped, to be read again from the store.
    func registerTogether(
        _ commands: [QueuedToken]
    ) async -> Result<[Result<ActivityRecord, ServiceError>], ServiceError> {
        var outcomes: [Result<ActivityRecord, ServiceError>] = []
        var deliveries: [Delivery] = []
        var changed = ChangeSet(capacity: commands.count)
        do throws(ServiceError) {
            let holders = try await persist { try await self.store.openHolders(updateTokens: commands.map(\.token)) }
            var batch = TokenBatch(stored: holders)
            for command in commands {
                var own = ChangeSet()
                var sent: [Delivery] = []
                do {
                    outcomes.append(.success(try await register(command, in: batch, into: &sent, changed: &own)))
                } catch {
                    guard own.isEmpty, sent.isEmpty else { throw error }
                    outcomes.append(.failure(error))
                }
                batch.note(own.all)
                for record in own.all { changed.append(record) }
                deliveries += sent
            }
            try await finish(deliveries, changed)
            let moment = now()
            for (command, outcome) in zip(commands, outcomes) {
                guard case .success = outcome else { continue }
                pendingSightings.append(UpdateTokenSighting(deviceId: command.deviceId, token: command.token, firstSeenAt: moment))
            }
            if pendingSightings.count >= Self.sightingsAtOnce { await flushSightings() }
        } catch {
            for matchId in Set(commands.map(\.matchId)) where matches[matchId] != nil { matches[matchId]?.cache = nil }
            return .failure(error)
        }
        return .success(outcomes)
    }

    /// Registered update tokens are noted in the store (`UpdateTokenSighting`) this many at a time, or at the next
    /// tick (at most a second in `serve`), or before a device's diagnostics are read: one write per many tokens rather
    /// than one per registration, which through the API is a few tokens each.
    static let sightingsAtOnce = 1024

    /// Notes the registered tokens not noted yet, for the devices' diagnostics. A failure is logged and those
    /// sightings are let go: the registrations stand, and those tokens show no age. A crash loses at most a tick's.
    public func flushSightings() async {
        guard !pendingSightings.isEmpty else { return }
        let sightings = pendingSightings
        pendingSightings = []
        do {
            try await store.noteUpdateTokens(sightings, now: now())
        } catch {
            logger.warning("update tokens registered, but when they were first seen was not noted", metadata: [
                "tokens": "\(sightings.count)", "error": "\(error)",
            ])
        }
    }

    /// One reported update token, its changes and deliveries put into those given (`registerTogether` saves them).
    func register(
        _ command: QueuedToken, in batch: TokenBatch, into deliveries: inout [Delivery], changed: inout ChangeSet
    ) async throws(ServiceError) -> ActivityRecord {
        let (activityId, deviceId, matchId) = (command.activityId, command.deviceId, command.matchId)
        try await loadActivities(matchId: matchId)
        if let holder = batch.holder(of: command.token), holder != activityId {
            throw ServiceError(.conflict, "this update token belongs to another activity")
        }
        if var record = matches[matchId]?.cache?[activityId] {
            guard record.deviceId == deviceId else { throw ServiceError(.forbidden, "activity belongs to another device") }
            record.environment = command.environment
            let actions = record.lifecycle.updateTokenRegistered(command.token, now: now(), policy: policy)
            try await execute(actions, on: &record, into: &deliveries, changed: &changed)
            return matches[matchId]?.cache?[activityId] ?? record
        }
        // Not open here: ended earlier in this batch, ended before, or not known at all.
        var known = batch.changed(activityId)
        if known == nil { known = try await persist { try await self.store.activity(id: activityId) } }
        if let known {
            guard known.deviceId == deviceId else { throw ServiceError(.forbidden, "activity belongs to another device") }
            throw ServiceError(.conflict, "activity \(activityId) has ended")
        }
        // Adopted: the app started this activity itself. It replaces the broker's own, unstarted or not.
        for other in matches[matchId]?.cache?.records(deviceId: deviceId) ?? [] {
            // An end (dismissed at once) if it ever reached the device, so no frozen twin stays.
            try await end(other, reason: .unfollowed, into: &deliveries, changed: &changed)
        }
        var record = ActivityRecord(
            deviceId: deviceId, environment: command.environment,
            lifecycle: .adopted(activityId: activityId, matchId: matchId, updateToken: command.token, now: now()),
            updatedAt: now())
        try await save(record, changed: &changed)
        if let latest = latest(matchId: matchId) {
            var quiet = latest
            quiet.keyEvents = []  // the device shows its own state; bring it up to date without an alert
            try await execute(record.lifecycle.matchChanged(quiet, now: now(), policy: policy),
                              on: &record, into: &deliveries, changed: &changed)
        }
        return matches[matchId]?.cache?[activityId] ?? record
    }
}
