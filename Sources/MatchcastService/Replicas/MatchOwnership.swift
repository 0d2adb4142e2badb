import Foundation
import Logging
import MatchcastStore
import Synchronization

/// Which matches this replica runs: the leases it holds, by match id, with the generation each was claimed at
/// (the fence its writes carry). Only the holder of a match's lease polls it and runs its activities; a replica
/// that loses a lease (it could not renew in time and another took over) lets the match go at once.
///
/// `solo` (the single-process stores) holds every match without asking anyone.
public final class MatchOwnership: Sendable {
    /// The lease rows and this replica's name in them.
    public struct Shared: Sendable {
        public let store: any ReplicaStore
        public let replicaId: String
        public let leaseTTL: Duration
        /// Who this process is in the lease rows and write fences: the replica id and a nonce of this process
        /// (`web-1#5f3a09c1`). Two running processes configured with one replica id are then two owners, not one
        /// that both renew: they never run the same match. A restarted process is a new owner too; it takes its
        /// predecessor's matches once their leases expire, as any replica takes a dead one's.
        public let leaseOwner: String

        public init(store: any ReplicaStore, replicaId: String, leaseTTL: Duration) {
            self.store = store
            self.replicaId = replicaId
            self.leaseTTL = leaseTTL
            leaseOwner = replicaId + "#" + String(UInt32.random(in: .min ... .max), radix: 16)
        }
    }

    /// What a claim found.
    public enum Claim: Sendable, Equatable {
        /// Held before the claim (renewed).
        case held
        /// New to this replica: free before, or taken over from an owner whose lease expired.
        case gained(takenOver: Bool)
        /// Another replica holds it.
        case elsewhere
    }

    public let shared: Shared?
    private let held = Mutex<[String: Int]>([:])

    /// Every match is this process's.
    public static let solo = MatchOwnership(shared: nil)

    public init(shared: Shared?) {
        self.shared = shared
    }

    public var isSolo: Bool { shared == nil }

    /// True when this replica runs the match.
    public func holds(_ matchId: String) -> Bool {
        shared == nil || held.withLock { $0[matchId] != nil }
    }

    /// The matches this replica holds, sorted (empty when solo: it holds every match without a lease).
    public var heldMatches: [String] {
        held.withLock { $0.keys.sorted() }
    }

    /// The fence for writes about these matches (nil when solo). A match not held is fenced with generation 0,
    /// which no lease has: the write is refused.
    public func fence(for matchIds: some Sequence<String>) -> LeaseFence? {
        guard let shared else { return nil }
        let generations = held.withLock { held in
            Dictionary(matchIds.map { ($0, held[$0] ?? 0) }, uniquingKeysWith: { first, _ in first })
        }
        return LeaseFence(owner: shared.leaseOwner, generations: generations)
    }

    /// Claims (or renews) the match's lease.
    public func claim(_ matchId: String) async throws(StoreError) -> Claim {
        guard let shared else { return .held }
        guard let change = try await shared.store.claim(matchId: matchId, owner: shared.leaseOwner, ttl: shared.leaseTTL)
        else {
            held.withLock { _ = $0.removeValue(forKey: matchId) }
            return .elsewhere
        }
        let before = held.withLock { $0.updateValue(change.lease.generation, forKey: matchId) }
        if before == change.lease.generation, change.reason == .renewed { return .held }
        return .gained(takenOver: change.reason == .takenOver)
    }

    /// Renews every held lease; returns the matches whose lease was lost (now let go).
    public func renewAll() async -> [String] {
        guard let shared else { return [] }
        let asked = heldMatches
        let renewed: [MatchLease]
        do {
            renewed = try await shared.store.renew(matchIds: asked, owner: shared.leaseOwner, ttl: shared.leaseTTL)
        } catch {
            // The database did not answer: keep the leases for now; the fence refuses writes if one expired and
            // moved, and the next renewal tells.
            return []
        }
        let generations = Dictionary(renewed.map { ($0.matchId, $0.generation) }, uniquingKeysWith: { first, _ in first })
        return held.withLock { held in
            // Only the leases it asked for can be lost (one claimed meanwhile is not in the answer).
            let lost = asked.filter { held[$0] != nil && generations[$0] != held[$0] }
            for matchId in lost { held[matchId] = nil }
            return lost
        }
    }

    /// Gives the match up (its lease becomes free at once for another replica).
    public func release(_ matchId: String) async {
        guard let shared else { return }
        held.withLock { _ = $0.removeValue(forKey: matchId) }
        _ = try? await shared.store.release(matchId: matchId, owner: shared.leaseOwner)
    }

    /// Forgets a match without touching the store (a fenced write found it lost).
    public func lost(_ matchId: String) {
        held.withLock { _ = $0.removeValue(forKey: matchId) }
    }
}
