import Synchronization

/// Small writes of one kind from many callers, sent to PostgreSQL as one statement: the PostgreSQL counterpart of
/// `SQLiteWriteQueue`'s grouping.
///
/// What a small PostgreSQL write costs this process is mostly its call, not its rows: a pooled connection leased and
/// watched (`PostgresStore.withConnection`), a round trip, the hops between the caller's task and the connection's
/// event loop. With many matches polled and delivered at once (a save of each changed match, a fan-out chunk of a few
/// activities, the relay's removal of what it sent) those calls add up per poll. A write that may wait and that finds
/// a write of its kind begun less than twice `linger` ago waits `linger` (the store's `writeLinger`) for others of
/// its kind; the first of them (the leader) then sends them all in one call (`run`), and each caller resumes with its
/// own outcome once that call ended. A write that may not wait, that an API request waits for
/// (`StoreWrites.callerWaits`), or that finds its kind idle of late, is run alone by its caller, as before.
///
/// `run` gives each item its outcome. When it throws (the statement failed as a whole: nothing of it was written),
/// each caller runs its item alone instead, so that one bad item fails alone and says what is wrong.
final class PostgresWriteGroup<Item: Sendable>: Sendable {
    typealias Run = @Sendable ([Item]) async throws(StoreError) -> [Result<Void, StoreError>]

    /// What a caller does with its write.
    enum Turn: Sendable {
        /// Run it alone, now.
        case alone
        /// It was sent with others: this is its outcome.
        case done(Result<Void, StoreError>)
    }

    private struct Waiter: Sendable {
        let item: Item
        let turn: CheckedContinuation<Turn, Never>
    }

    private enum Role { case alone, lead, join }

    private struct State {
        /// Items waiting for the leader's call, in the order they came (the leader's first).
        var waiting: [Waiter] = []
        /// A leader waits for others: a write that may wait joins it.
        var gathering = false
        /// When the last call of this kind began, alone or grouped.
        var lastBegan: ContinuousClock.Instant?
    }

    /// How long a write that may wait waits for others, when one of its kind began less than twice this ago.
    let linger: Duration
    /// The most items one call takes; a write that finds the group full goes alone.
    let limit: Int

    private let state = Mutex(State())
    private let calls = Atomic<Int>(0)
    private let groupedItems = Atomic<Int>(0)

    init(linger: Duration, limit: Int = 64) {
        self.linger = linger
        self.limit = max(1, limit)
    }

    /// Grouped calls made so far, and the items they carried (tests).
    var groupedCalls: Int { calls.load(ordering: .relaxed) }
    var itemsSentGrouped: Int { groupedItems.load(ordering: .relaxed) }

    /// Whether `item` goes alone or went with others (then with its outcome). `run` is used when this caller leads a
    /// group; every caller of one group passes the same.
    func turn(for item: Item, mayWait: Bool, run: Run) async -> Turn {
        // A write someone waits for (an API request's) never lingers.
        let mayWait = mayWait && !StoreWrites.callerWaits
        let now = ContinuousClock.now
        let role = state.withLock { state -> Role in
            if mayWait && state.gathering && state.waiting.count + 1 < limit { return .join }
            if mayWait && linger > .zero, let last = state.lastBegan, now - last < linger * 2, !state.gathering {
                state.gathering = true
                return .lead
            }
            state.lastBegan = now
            return .alone
        }
        switch role {
        case .alone:
            return .alone
        case .join:
            return await withCheckedContinuation { (turn: CheckedContinuation<Turn, Never>) in
                let joined = state.withLock { state -> Bool in
                    // The leader may have taken the group between the two locks: then this write goes alone.
                    guard state.gathering, state.waiting.count + 1 < limit else { return false }
                    state.waiting.append(Waiter(item: item, turn: turn))
                    return true
                }
                if !joined { turn.resume(returning: .alone) }
            }
        case .lead:
            try? await Task.sleep(for: linger)
            let others = state.withLock { state -> [Waiter] in
                state.gathering = false
                state.lastBegan = .now
                defer { state.waiting.removeAll(keepingCapacity: true) }
                return state.waiting
            }
            guard !others.isEmpty else { return .alone }
            calls.add(1, ordering: .relaxed)
            groupedItems.add(others.count + 1, ordering: .relaxed)
            do throws(StoreError) {
                let outcomes = try await run([item] + others.map(\.item))
                guard outcomes.count == others.count + 1 else {
                    throw StoreError.database("a grouped write gave \(outcomes.count) outcomes for \(others.count + 1) items")
                }
                for (waiter, outcome) in zip(others, outcomes.dropFirst()) { waiter.turn.resume(returning: .done(outcome)) }
                return .done(outcomes[0])
            } catch {
                for waiter in others { waiter.turn.resume(returning: .alone) }
                return .alone
            }
        }
    }
}
