import Synchronization

/// The follow changes the poll supervisor has not looked at yet: the matches followed and unfollowed here (through
/// this replica's API, or by commands other replicas posted for the matches this one runs), the matches this replica
/// just claimed, and whether everything must be listed again (this replica took over matches in bulk). Each change
/// wakes the supervisor, which looks only at the matches named, so a follow, or a claim of the match it names, costs
/// the same however many matches are polled.
public final class FollowChanges: Sendable {
    public struct Pending: Sendable, Equatable {
        /// Followed here: wanted.
        public var followed: Set<String> = []
        /// Unfollowed here (others may still follow them), or just claimed by this replica (an API call named them,
        /// followed or not): wanted if the store says someone follows them.
        public var unsure: Set<String> = []
        /// List every followed match again.
        public var relist = false

        public init() {}
    }

    /// Yields after every change (the newest wake-up only: the changes themselves are kept in `pending`).
    public let wakeUps: AsyncStream<Void>
    private let wake: AsyncStream<Void>.Continuation
    private let pending = Mutex(Pending())

    public init() {
        (wakeUps, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    public func followed(_ matchId: String) {
        pending.withLock { _ = $0.followed.insert(matchId) }
        wake.yield()
    }

    /// Whether the match is still followed is the store's to say (one index probe, rather than a new list of every
    /// followed match): it was unfollowed here, or this replica just claimed its lease.
    public func unsure(_ matchId: String) {
        pending.withLock { _ = $0.unsure.insert(matchId) }
        wake.yield()
    }

    public func relist() {
        pending.withLock { $0.relist = true }
        wake.yield()
    }

    /// What changed since the last call, and nothing pending after it.
    public func take() -> Pending {
        pending.withLock { pending in
            defer { pending = Pending() }
            return pending
        }
    }
}

extension FollowChanges.Pending {
    /// These changes added to `earlier` ones.
    public func merged(into earlier: Self) -> Self {
        var merged = earlier
        merged.followed.formUnion(followed)
        merged.unsure.formUnion(unsure)
        merged.relist = merged.relist || relist
        return merged
    }
}
