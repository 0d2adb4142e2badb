import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastStore
import Metrics
import Synchronization

// A match update fanned out to every open activity of the match: worked out chunk by chunk in the cache, each chunk
// saved and sent through a `CommitPipeline` while the next is worked out.
extension LifecycleManager {
    /// A fan-out is saved and handed to the relay in chunks of this many activities, each while the next one is
    /// worked out: the first devices are sent the update after one chunk rather than after every activity, and the
    /// store's writes run beside the lifecycle work instead of after it. Chunks worked out while a save runs are saved
    /// together in the next (`CommitPipeline`). How the size was chosen: docs/performance-history.md.
    static let fanOutChunk = 1024
    /// The most activities a fan-out saves at once when its chunks queue behind a save, on a store that saves them
    /// together (`MatchcastStore.savesChunksTogether`).
    static let fanOutSaveLimit = 8 * fanOutChunk
    /// How far a fan-out's lifecycle work runs ahead of what is sent, in activities and deliveries (`CommitPipeline`'s
    /// window): several save groups, so that the store and the relay always have the next one, and a bound on what a
    /// fan-out holds in memory however many follow the match.
    static let fanOutWindow = 64 * fanOutChunk

    /// `row`, when given, carries the match's new state (a change's `MatchRecord`): the fan-out's first save takes it
    /// into its transaction, and a fan-out that saves nothing (no activity changed) leaves it there for the caller.
    func fanOut(_ update: MatchUpdate, to matchId: String, carrying row: MatchRowCarry? = nil) async throws(ServiceError) {
        let began = ContinuousClock.now
        try await loadActivities(matchId: matchId)
        var update = update
        if let broadcast {
            // Channel mode: the match's broadcast channel (made now if the rule says so) rides on the update.
            update = await broadcast.attach(update, matchId: matchId, followers: matches[matchId]?.cache?.count ?? 0)
            matches[matchId]?.tracker.attach(channelId: update.channelId)
        }
        guard let slots = matches[matchId]?.cache?.orderedSlots() else { return }
        // Every activity takes the update: when a tick next has something to do is known afresh after it.
        matches[matchId]?.cache?.beginSweep()
        // One fence for the whole fan-out: every chunk is worked out from the cache as this lease left it.
        let fence = ownership.fence(for: [matchId])
        let pipeline = CommitPipeline(
            groupLimit: store.savesChunksTogether ? Self.fanOutSaveLimit : Self.fanOutChunk, window: Self.fanOutWindow,
            save: { [self] records, deliveries, share async throws(ServiceError) in
                let match = row?.take()
                try await save(records, deliveries, fence: fence, share: share, match: match)
                if match != nil { row?.saved() }
            },
            send: { [relay] deliveries in await relay.submit(deliveries) })
        do {
            var start = 0
            // The sent state the fan-out's activities share (`FanOutShare`), from its first chunk that changed one;
            // worked out only for a store that keeps it once per match.
            let describes = store.keepsFanOutState
            var shared: FanOutState?
            // One time for the whole fan-out: its activities then share their sent state from chunk to chunk.
            let moment = now()
            repeat {
                let end = min(start + Self.fanOutChunk, slots.count)
                let range = matches[matchId]?.cache?.idRange(of: slots[start..<end])
                var (deliveries, changed, unchanged) = try await advance(slots[start..<end], of: matchId, to: update, at: moment)
                start = end
                if start == slots.count, let broadcast { deliveries += await broadcast.matchChanged(update, matchId: matchId) }
                if describes { shared = shared ?? changed.sharedState }
                var share: FanOutShare?
                if let shared, let range {
                    // Described to the store, the chunk holds every open activity of its range: those it left as
                    // they were are written whole, so that they do not move with the others.
                    for slot in unchanged {
                        if let record = matches[matchId]?.cache?.record(at: slot) { changed.append(record) }
                    }
                    share = changed.share(shared, from: range.from, through: start == slots.count ? nil : range.through)
                }
                // A fan-out of one chunk (most changes: a match with up to a chunk's worth of activities) is saved
                // and sent by `finish`, on this task.
                await pipeline.add(records: changed.all, deliveries: deliveries, share: share, last: start == slots.count)
            } while start < slots.count
            matches[matchId]?.cache?.endSweep()
            try await pipeline.finish()
        } catch {
            // What was handed on finishes (or fails) before the error is reported: nothing runs on behind it.
            _ = try? await pipeline.finish()
            fanOutFailed(matchId)
            await broadcast?.rollBack(matchId: matchId)
            throw error
        }
        matches[matchId]?.fanOutPending = false
        await broadcast?.commit(matchId: matchId)
        if !slots.isEmpty { fanOutDuration.record(duration: ContinuousClock.now - began) }
    }

    /// A fan-out that failed part-way left the cache ahead of the store: activities changed (started, updated, ended)
    /// whose change was never saved nor sent. The cache is dropped, to be read again from the store, and the next
    /// tick fans the latest update out again from there, as after a restart: nothing is lost, nothing started twice.
    func fanOutFailed(_ matchId: String) {
        guard matches[matchId] != nil else { return }  // forgotten (the lease was lost): its new owner takes over
        matches[matchId]?.cache = nil
        matches[matchId]?.fanOutPending = true
    }

    /// The activities in `slots` take `update`, in order: what they send, how they changed, and the slots of those
    /// that did not change and may share their match's fan-out state (open, started: a waiting activity never
    /// shares it, `ActivityBatch`).
    func advance(
        _ slots: ArraySlice<Int>, of matchId: String, to update: MatchUpdate, at moment: Date
    ) async throws(ServiceError) -> ([Delivery], ChangeSet, [Int]) {
        var deliveries: [Delivery] = []
        deliveries.reserveCapacity(slots.count)
        // A store that keeps no content takes only the records whose standing changed (a start, an end, a token).
        var changed = ChangeSet(capacity: slots.count, keepsMoved: store.keepsActivityContent)
        var unchanged: [Int] = []
        // A kick-off starts every waiting activity: their devices' push-to-start tokens come in one read.
        var waitingDevices: [String] = []
        if let cache = matches[matchId]?.cache {
            for slot in slots where cache.phase(at: slot) == .waiting {
                if let deviceId = cache.record(at: slot)?.deviceId { waitingDevices.append(deviceId) }
            }
        }
        var tokens: [String: String] = [:]
        if !waitingDevices.isEmpty {
            let devices = waitingDevices
            tokens = try await persist { try await self.store.pushToStartTokens(deviceIds: devices) }.mapValues(\.token)
        }
        // The cache is taken out of `matches` while its activities change in place (no copy of the match's state, no
        // lookup per activity), and put back after: nothing here awaits.
        guard var cache = matches[matchId]?.cache.take() else { return (deliveries, changed, unchanged) }
        // One buffer for every activity's actions, and the last `aps` sent, which the next activity's usually is.
        var scratch = UpdateScratch()
        for slot in slots {
            switch cache.phase(at: slot) {
            case nil:
                continue
            case .waiting?:
                start(&cache, at: slot, to: update, now: moment, tokens: tokens, into: &deliveries, changed: &changed)
            case _?:
                if !advance(&cache, at: slot, to: update, now: moment, scratch: &scratch, into: &deliveries, changed: &changed) {
                    unchanged.append(slot)
                }
            }
        }
        // Moved back, not copied: a copy left alive here would make the next change copy every activity.
        matches[matchId]?.cache = consume cache
        return (deliveries, changed, unchanged)
    }

    /// One waiting activity of a fan-out, changed in place in the cache as `mayAct` and `execute` would change it,
    /// with its device's push-to-start token from `tokens` (the chunk's, read at once): started (its start a
    /// delivery), ended with its match, or left waiting when its device has no token or its start spacing has not
    /// passed. The record joins `changed` when it changed.
    func start(
        _ cache: inout ActivityCache, at slot: Int, to update: MatchUpdate, now moment: Date, tokens: [String: String],
        into deliveries: inout [Delivery], changed: inout ChangeSet
    ) {
        cache.update(at: slot) { record in
            if let gate = startGate[record.deviceId], gate > now() { return }
            guard let token = tokens[record.deviceId] else { return }
            // A waiting activity the update leaves waiting is left as it was.
            let actions = record.lifecycle.matchChanged(update, now: moment, policy: policy)
            guard !actions.isEmpty else { return }
            for action in actions {
                // `.finished` sends nothing; only a tick restarts an activity.
                guard case .send(let intent) = action else { continue }
                var pushToStart: String?
                if case .pushToStart = intent.recipient {
                    pushToStart = token
                    // The spacing is APNs's (iOS throttles push-to-start); FCM and Web Push have none.
                    if !DirectAddress.isDirect(token) {
                        startGate[record.deviceId] = now().addingTimeInterval(settings.pushToStartSpacing.seconds)
                    }
                }
                build(intent, for: record, pushToStartToken: pushToStart, now: moment, into: &deliveries)
                if let pushToStart { Self.started(&record, through: pushToStart) }
            }
            record.updatedAt = moment
            changed.appendNew(record)
        }
    }

    /// One started activity of a fan-out, changed in place in the cache: its lifecycle takes the update, and what
    /// it sends (an update or an end, to its update token: never a start, which only a waiting activity sends)
    /// becomes a delivery; the record joins `changed` unless the update left it as it was (false then). It joins as
    /// moved when only what it shows or holds changed (`FanOutShare`), or not at all then for a store that keeps no
    /// content (`ChangeSet.keepsMoved`).
    func advance(
        _ cache: inout ActivityCache, at slot: Int, to update: MatchUpdate, now moment: Date,
        scratch: inout UpdateScratch, into deliveries: inout [Delivery], changed: inout ChangeSet
    ) -> Bool {
        // The record joins `changed` from its slot, copied once (before a record that closed leaves the cache).
        return cache.update(at: slot) { record -> Bool in
            let before = record.lifecycle.quietState
            let standing = record.lifecycle.standing
            record.lifecycle.matchChanged(update, now: moment, policy: policy, scratch: &scratch)
            if scratch.actions.isEmpty, record.lifecycle.quietState == before { return false }
            for action in scratch.actions {
                switch action {
                case .send(let intent): build(intent, for: record, pushToStartToken: nil, now: moment, into: &deliveries)
                case .finished: break
                case .restart: assertionFailure("a match update never restarts an activity")
                }
            }
            record.updatedAt = moment
            changed.appendNew(record, moved: record.isOpen && record.lifecycle.standing == standing)
            return true
        }
    }
}

/// A change's match row on its way into its fan-out's first save (`fanOut(_:to:carrying:)`): taken by that save, and
/// known saved once the save returned. What the fan-out did not take, its caller saves alone.
final class MatchRowCarry: Sendable {
    private struct State {
        var row: MatchRecord?
        var saved = false
    }

    private let state: Mutex<State>

    init(_ row: MatchRecord) { state = Mutex(State(row: row)) }

    /// The row, to the first caller only.
    func take() -> MatchRecord? { state.withLock { $0.row.take() } }

    /// The save that took the row returned.
    func saved() { state.withLock { $0.saved = true } }

    /// Whether a save took the row and returned.
    var isSaved: Bool { state.withLock { $0.saved } }
}
