import MatchcastCore
import MatchcastStore
import Synchronization

/// Commits a fan-out chunk by chunk, off the lifecycle manager's actor.
///
/// Chunks are saved (their activities with their deliveries, in the store's outbox) in the order added, one save
/// after the other. The first chunk is saved alone, so the first devices are sent the update after one chunk; the
/// chunks added while a save runs may be saved together in the next one, up to `groupLimit` activities (`ChunkGroup`:
/// one transaction and one commit for several chunks, fewer and larger as the store is slower than the lifecycle
/// work). The manager joins them only for a store whose every save waits for the disk
/// (`MatchcastStore.savesChunksTogether`).
///
/// Sending runs beside saving: whatever has been saved and not yet sent goes to the relay as one batch as soon as the
/// relay has taken the previous one. So saving runs ahead of sending, and a sink slower than the store (a webhook,
/// APNs) gets large batches, with all its connections busy, rather than one chunk at a time. Nothing is sent before
/// it is saved; a save that fails stops every chunk after it, and what was saved before it is still sent.
///
/// How far the work runs ahead is bounded: `add` returns only once no more than `window` activities and deliveries
/// added are still to be sent (or, for a chunk with nothing to send, saved). The lifecycle work of a fan-out to a
/// million activities runs faster than the store and the relay take its chunks; without the bound, every chunk of the
/// fan-out waited in memory at once, with its deliveries, beside the activities themselves.
///
/// No task runs before the first chunk, nor after `finish` returns. A fan-out of one chunk (added as the `last` and the
/// first) has nothing to overlap: `finish` saves and sends it on the caller's task, and no task runs at all.
final class CommitPipeline: Sendable {
    typealias Save = @Sendable (
        _ records: [ActivityRecord], _ deliveries: [Delivery], _ share: FanOutShare?
    ) async throws(ServiceError) -> Void
    typealias Send = @Sendable (_ deliveries: [Delivery]) async -> Void

    /// The most activities one save takes when chunks are saved together (a chunk larger than that is saved alone).
    let groupLimit: Int
    /// The most weight (`ChunkGroup.weight`) in flight when `add` returns.
    let window: Int

    private struct State {
        /// Added, not yet taken by the saver, in order.
        var pending: [ChunkGroup] = []
        /// Saved, not yet taken by the sender, in order, each with the weight it lets go once sent.
        var ready: [(deliveries: [Delivery], weight: Int)] = []
        /// The weight of the chunks added and not yet sent (or saved, for one with nothing to send; or dropped).
        var inFlight = 0
        /// `add`s waiting for `inFlight` to come down to `window`.
        var waiting: [CheckedContinuation<Void, Never>] = []
        /// Runs while chunks are pending; started by the first chunk added after it ended.
        var saver: Task<Void, Never>?
        /// Runs while saved deliveries wait to be sent.
        var sender: Task<Void, Never>?
        /// Whether the first chunk has been taken: it is saved alone, however many are pending by then.
        var tookFirst = false
        /// The first save's error: the chunks after it are dropped, unsaved.
        var failure: ServiceError?
        /// The fan-out's only chunk, left for `finish` to save and send.
        var alone: ChunkGroup?
        var finished = false
    }

    private let save: Save
    private let send: Send
    private let state = Mutex(State())

    init(groupLimit: Int = 8 * 1024, window: Int = 64 * 1024, save: @escaping Save, send: @escaping Send) {
        self.groupLimit = groupLimit
        self.window = max(1, window)
        self.save = save
        self.send = send
    }

    /// Queues one chunk (described to the store by `share`, when given): saved after every chunk added before it, then
    /// sent. `last`: no chunk comes after it. Not after `finish`. Returns once what is in flight, this chunk included,
    /// fits `window` (a chunk larger than the window, once it is sent).
    func add(records: [ActivityRecord], deliveries: [Delivery], share: FanOutShare? = nil, last: Bool = false) async {
        guard !records.isEmpty || !deliveries.isEmpty else { return }
        let chunk = ChunkGroup(records: records, deliveries: deliveries, share: share)
        let full = state.withLock { state -> Bool in
            precondition(!state.finished, "a chunk added to a finished commit pipeline would be saved and never sent")
            guard state.failure == nil else { return false }  // a save failed: nothing after it is saved
            if last, state.saver == nil, !state.tookFirst {
                state.alone = chunk
                return false
            }
            state.inFlight += chunk.weight
            state.pending.append(chunk)
            if state.saver == nil {
                state.saver = Task.detached { [self] in await runSaves() }
            }
            return state.inFlight > window
        }
        guard full else { return }
        // Checked again under the lock: what was in flight may have been sent meanwhile.
        await withCheckedContinuation { continuation in
            let go = state.withLock { state -> Bool in
                guard state.inFlight > window else { return true }
                state.waiting.append(continuation)
                return false
            }
            if go { continuation.resume() }
        }
    }

    /// Waits until every chunk is saved and what was saved is sent; throws the first save's error, if any.
    func finish() async throws(ServiceError) {
        if let alone = state.withLock({ $0.alone.take() }) {
            do {
                try await save(alone.records, alone.deliveries, alone.share)
                if !alone.deliveries.isEmpty { await send(alone.deliveries) }
            } catch {
                // Recorded as the pipeline's own saves record theirs: `finish` ends the same way either way.
                state.withLock { $0.failure = error }
            }
        }
        while let saver = state.withLock({ $0.saver }) {
            await saver.value
        }
        let sender = state.withLock { state in
            state.finished = true
            return state.sender
        }
        await sender?.value
        if let failure = state.withLock({ $0.failure }) { throw failure }
    }

    /// Saves what is pending, group by group, until nothing is; then ends (the next chunk starts another).
    private func runSaves() async {
        while true {
            let taken = state.withLock { state -> [ChunkGroup]? in
                guard !state.pending.isEmpty, state.failure == nil else {
                    state.saver = nil
                    return nil
                }
                if !state.tookFirst {
                    state.tookFirst = true
                    return [state.pending.removeFirst()]
                }
                defer { state.pending.removeAll(keepingCapacity: true) }
                return state.pending
            }
            guard let taken else { return }
            let groups = ChunkGroup.joined(taken, limit: groupLimit)
            for (index, group) in groups.enumerated() {
                do {
                    try await save(group.records, group.deliveries, group.share)
                } catch {
                    // This group and every one after it, taken or pending, is dropped unsaved.
                    let dropped = state.withLock { state -> Int in
                        state.failure = error
                        state.saver = nil
                        let pending = state.pending.reduce(0) { $0 + $1.weight }
                        state.pending.removeAll()
                        return pending
                    }
                    letGo(dropped + groups[index...].reduce(0) { $0 + $1.weight })
                    return
                }
                guard !group.deliveries.isEmpty else {
                    letGo(group.weight)
                    continue
                }
                state.withLock { state in
                    state.ready.append((group.deliveries, group.weight))
                    if state.sender == nil {
                        state.sender = Task.detached { [self] in await runSends() }
                    }
                }
            }
        }
    }

    /// Sends what is saved, all of it at once each time, until nothing is; then ends (the next save starts another).
    private func runSends() async {
        while true {
            let batches = state.withLock { state -> [(deliveries: [Delivery], weight: Int)]? in
                guard !state.ready.isEmpty else {
                    state.sender = nil
                    return nil
                }
                defer { state.ready.removeAll(keepingCapacity: true) }
                return state.ready
            }
            guard let batches else { return }
            // One batch goes as it is; several are joined into one for the relay.
            await send(batches.count == 1 ? batches[0].deliveries : Array(batches.map(\.deliveries).joined()))
            letGo(batches.reduce(0) { $0 + $1.weight })
        }
    }

    /// `weight` is no longer in flight: the `add`s waiting return once what is left fits the window.
    private func letGo(_ weight: Int) {
        let resumed = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.inFlight -= weight
            guard state.inFlight <= window else { return [] }
            defer { state.waiting.removeAll() }
            return state.waiting
        }
        for continuation in resumed { continuation.resume() }
    }
}

/// Chunks of a fan-out saved as one: their records and deliveries in order, and one description covering their
/// ranges (`FanOutShare`).
struct ChunkGroup: Sendable {
    var records: [ActivityRecord]
    var deliveries: [Delivery]
    var share: FanOutShare?

    /// What the group holds in memory until it is sent, as `CommitPipeline`'s window counts it: its activities and its
    /// deliveries.
    var weight: Int { records.count + deliveries.count }

    /// `chunks` in order, each joined to the group before it when `join` allows and the group stays within
    /// `limit` activities.
    static func joined(_ chunks: [ChunkGroup], limit: Int) -> [ChunkGroup] {
        var groups: [ChunkGroup] = []
        for chunk in chunks {
            if let last = groups.indices.last, groups[last].records.count + chunk.records.count <= limit,
               groups[last].join(chunk) {
                continue
            }
            groups.append(chunk)
        }
        return groups
    }

    /// Appends `next`, the chunk after this group in the same fan-out, when the two may be saved as one: both
    /// undescribed, or both described with the same state (the group's range then runs on through `next`'s, and
    /// `next`'s moved records keep their place). False, and nothing changed, otherwise: the group ends the fan-out (no
    /// `through`), or the states differ.
    mutating func join(_ next: ChunkGroup) -> Bool {
        switch (share, next.share) {
        case (nil, nil):
            break
        case (var joined?, let following?):
            guard joined.through != nil, joined.state == following.state else { return false }
            let offset = records.count
            joined.moved += following.moved.map { $0 + offset }
            joined.through = following.through
            share = joined
        default:
            return false
        }
        records += next.records
        deliveries += next.deliveries
        return true
    }
}
