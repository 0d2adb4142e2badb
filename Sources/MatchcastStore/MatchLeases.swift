import Foundation
import Metrics
import Synchronization

/// Which replica polls a match: a lease one owner holds until it expires, renewed while the owner lives,
/// taken over by another owner once it has expired. With one process (`memory`, `sqlite:`) every claim of
/// a free match succeeds and nothing is contested; with PostgreSQL several brokers share the table.
public protocol MatchLeases: Sendable {
    /// Claims the match for `owner` for `ttl`: the lease when the match was free, expired, or already
    /// `owner`'s (then renewed); `nil` when another owner holds it.
    func claim(matchId: String, owner: String, ttl: Duration) async throws(StoreError) -> MatchLeaseChange?
    /// Extends by `ttl` from now each of these leases that is still `owner`'s, in one round trip, and returns
    /// them (sorted by match id). A match missing from the answer is no longer `owner`'s (expired and taken over,
    /// or released): the owner must stop running it.
    func renew(matchIds: [String], owner: String, ttl: Duration) async throws(StoreError) -> [MatchLease]
    /// Gives the match up; false when `owner` did not hold it.
    @discardableResult
    func release(matchId: String, owner: String) async throws(StoreError) -> Bool
    /// Every lease, expired ones included, sorted by match id.
    func leases() async throws(StoreError) -> [MatchLease]
    /// The leases owners other than `owner` hold, as one waiting to take them over sees them: the matches whose
    /// lease has expired (sorted), and how long until the next of the others expires. Measured on the store's
    /// clock, so replicas with skewed clocks agree.
    func leasesHeldElsewhere(than owner: String) async throws(StoreError) -> LeasesElsewhere
}

/// What `leasesHeldElsewhere(than:)` found.
public struct LeasesElsewhere: Sendable, Hashable {
    /// Expired leases of other owners, sorted: theirs no more, for whoever claims them first.
    public var expired: [String]
    /// How long until the first of the other owners' live leases expires; nil when there is none.
    public var nextExpiry: Duration?

    public init(expired: [String], nextExpiry: Duration?) {
        self.expired = expired
        self.nextExpiry = nextExpiry
    }
}

/// One match's lease as stored.
public struct MatchLease: Sendable, Hashable {
    public var matchId: String
    public var owner: String
    public var expiresAt: Date
    /// Grows by one each time the match changes owner: a fencing token, so work done under an older lease
    /// can be told apart.
    public var generation: Int

    public init(matchId: String, owner: String, expiresAt: Date, generation: Int) {
        self.matchId = matchId
        self.owner = owner
        self.expiresAt = expiresAt
        self.generation = generation
    }
}

/// A successful claim or renewal, and why the lease changed: the `reason` label of
/// `matchcast_lease_changes_total`.
public struct MatchLeaseChange: Sendable, Hashable {
    public enum Reason: String, Sendable, CaseIterable {
        /// The match had no lease.
        case acquired
        /// The owner extended its own lease.
        case renewed
        /// Another owner's lease had expired: the match moved (the churn an alert watches).
        case takenOver = "taken_over"
    }

    public var lease: MatchLease
    public var reason: Reason

    public init(lease: MatchLease, reason: Reason) {
        self.lease = lease
        self.reason = reason
    }
}

/// The lease table of a single process (`memory` and `sqlite:` stores): the same rules, in memory.
public final class LocalMatchLeases: MatchLeases {
    private let table = Mutex<[String: MatchLease]>([:])
    private let now: @Sendable () -> Date

    public init(now: @escaping @Sendable () -> Date = { Date() }) {
        self.now = now
    }

    public func claim(matchId: String, owner: String, ttl: Duration) throws(StoreError) -> MatchLeaseChange? {
        guard !owner.isEmpty else { throw .invalid("a lease owner must not be empty") }
        let now = self.now()
        return table.withLock { table in
            let expiresAt = now.addingTimeInterval(ttl.seconds)
            guard let held = table[matchId], !held.owner.isEmpty else {
                let lease = MatchLease(
                    matchId: matchId, owner: owner, expiresAt: expiresAt, generation: (table[matchId]?.generation ?? 0) + 1)
                table[matchId] = lease
                return LeaseCounter.count(MatchLeaseChange(lease: lease, reason: .acquired))
            }
            if held.owner == owner {
                table[matchId]?.expiresAt = expiresAt
                return MatchLeaseChange(lease: table[matchId]!, reason: .renewed)
            }
            guard held.expiresAt <= now else { return nil }
            let lease = MatchLease(matchId: matchId, owner: owner, expiresAt: expiresAt, generation: held.generation + 1)
            table[matchId] = lease
            return LeaseCounter.count(MatchLeaseChange(lease: lease, reason: .takenOver))
        }
    }

    public func renew(matchIds: [String], owner: String, ttl: Duration) -> [MatchLease] {
        let now = self.now()
        let leases = table.withLock { table in
            matchIds.sorted().compactMap { matchId -> MatchLease? in
                guard let held = table[matchId], held.owner == owner, !owner.isEmpty else { return nil }
                table[matchId]?.expiresAt = now.addingTimeInterval(ttl.seconds)
                return table[matchId]
            }
        }
        LeaseCounter.countLost(asked: matchIds, renewed: leases)
        return leases
    }

    @discardableResult
    public func release(matchId: String, owner: String) -> Bool {
        table.withLock { table in
            guard !owner.isEmpty, table[matchId]?.owner == owner else { return false }
            // The row stays, ownerless, so the next owner's generation still grows.
            table[matchId]?.owner = ""
            table[matchId]?.expiresAt = .distantPast
            LeaseCounter.count("released")
            return true
        }
    }

    public func leases() -> [MatchLease] {
        table.withLock { $0.values.filter { !$0.owner.isEmpty }.sorted { $0.matchId < $1.matchId } }
    }

    public func leasesHeldElsewhere(than owner: String) -> LeasesElsewhere {
        let now = self.now()
        let others = table.withLock { $0.values.filter { !$0.owner.isEmpty && $0.owner != owner } }
        let expired = others.filter { $0.expiresAt <= now }.map(\.matchId).sorted()
        let next = others.filter { $0.expiresAt > now }.map(\.expiresAt).min()
        return LeasesElsewhere(expired: expired, nextExpiry: next.map { .milliseconds(Int64($0.timeIntervalSince(now) * 1000)) })
    }
}

/// `matchcast_lease_changes_total{reason}`: `acquired`, `taken_over`, `released`, `lost` (a renewal refused).
/// Renewals are not changes and are not counted.
enum LeaseCounter {
    static func count(_ change: MatchLeaseChange) -> MatchLeaseChange {
        if change.reason != .renewed { count(change.reason.rawValue) }
        return change
    }

    static func count(_ reason: String) {
        Counter(label: "matchcast_lease_changes_total", dimensions: [("reason", reason)]).increment()
    }

    /// A renewal refused: each asked-for lease that did not come back.
    static func countLost(asked: [String], renewed: [MatchLease]) {
        let lost = Set(asked).subtracting(renewed.map(\.matchId)).count
        if lost > 0 {
            Counter(label: "matchcast_lease_changes_total", dimensions: [("reason", "lost")]).increment(by: lost)
        }
    }
}

extension Duration {
    /// The duration in seconds, as a `TimeInterval`.
    var seconds: TimeInterval {
        TimeInterval(components.seconds) + TimeInterval(components.attoseconds) / 1e18
    }

    /// The duration in whole milliseconds (rounded down), for SQL intervals.
    var wholeMilliseconds: Int64 {
        components.seconds * 1000 + components.attoseconds / 1_000_000_000_000_000
    }
}
