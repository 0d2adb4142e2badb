import Foundation
import PostgresNIO

// Leases use the server's clock (`now()`), so replicas with skewed clocks still agree on expiry.
// `FOR UPDATE SKIP LOCKED`: a claim never waits behind another replica's claim of the same match; the
// one that got the row lock decides, the other sees the match as held.

extension PostgresStore: MatchLeases {
    public func claim(matchId: String, owner: String, ttl: Duration) async throws(StoreError) -> MatchLeaseChange? {
        guard !owner.isEmpty else { throw .invalid("a lease owner must not be empty") }
        let logger = self.logger
        let seconds = ttl.seconds
        let claimed = try await withConnection("claiming match '\(matchId)'") { connection -> (String, Date, Int, String)? in
            let inserted = try await connection.query(
                """
                INSERT INTO match_lease (match_id, owner, expires_at, generation)
                VALUES (\(matchId), \(owner), now() + \(seconds) * interval '1 second', 1)
                ON CONFLICT (match_id) DO NOTHING
                RETURNING owner, expires_at, generation, ''::text
                """,
                logger: logger
            ).collect((String, Date, Int, String).self)
            if let row = inserted.first { return row }
            // Free (released), expired, or ours: take or renew it, unless another claim holds the row now.
            let take: PostgresQuery = """
                WITH candidate AS (
                    SELECT match_id, owner AS previous FROM match_lease
                    WHERE match_id = \(matchId) AND (owner = \(owner) OR owner = '' OR expires_at <= now())
                    FOR UPDATE SKIP LOCKED
                )
                UPDATE match_lease AS lease SET
                    owner = \(owner),
                    expires_at = now() + \(seconds) * interval '1 second',
                    generation = CASE WHEN candidate.previous = \(owner) THEN lease.generation ELSE lease.generation + 1 END
                FROM candidate WHERE lease.match_id = candidate.match_id
                RETURNING lease.owner, lease.expires_at, lease.generation, candidate.previous
                """
            return try await connection.query(take, logger: logger).collect((String, Date, Int, String).self).first
        }
        guard let (holder, expiresAt, generation, previous) = claimed else { return nil }
        let lease = MatchLease(matchId: matchId, owner: holder, expiresAt: expiresAt.readBack, generation: generation)
        let reason: MatchLeaseChange.Reason = previous == owner ? .renewed : previous.isEmpty ? .acquired : .takenOver
        return LeaseCounter.count(MatchLeaseChange(lease: lease, reason: reason))
    }

    public func renew(matchIds: [String], owner: String, ttl: Duration) async throws(StoreError) -> [MatchLease] {
        guard !matchIds.isEmpty else { return [] }
        let logger = self.logger
        let seconds = ttl.seconds
        let rows = try await withConnection("renewing \(matchIds.count) leases") { connection in
            // The rows locked in match id order, as a save of several matches locks them (`PostgresStore.save(_:)` of
            // grouped saves): two statements that lock the same leases in one order cannot deadlock.
            try await connection.query(
                """
                WITH mine AS (
                    SELECT match_id FROM match_lease
                    WHERE match_id = ANY(\(matchIds)) AND owner = \(owner) AND owner <> ''
                    ORDER BY match_id FOR UPDATE
                )
                UPDATE match_lease AS lease SET expires_at = now() + \(seconds) * interval '1 second'
                FROM mine WHERE lease.match_id = mine.match_id
                RETURNING lease.match_id, lease.expires_at, lease.generation
                """,
                logger: logger
            ).collect((String, Date, Int).self)
        }
        let leases = rows.map { MatchLease(matchId: $0.0, owner: owner, expiresAt: $0.1.readBack, generation: $0.2) }
            .sorted { $0.matchId < $1.matchId }
        LeaseCounter.countLost(asked: matchIds, renewed: leases)
        return leases
    }

    @discardableResult
    public func release(matchId: String, owner: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        let channel = replicaChannel
        let signal = ReplicaSignal.leaseReleased(matchId: matchId).payload
        // The row stays, ownerless, so the next owner's generation still grows. The other replicas are told at
        // once (`NOTIFY`, sent when the update commits), so a match given up by a replica shutting down moves now.
        let released = try await withConnection("releasing match '\(matchId)'") { connection in
            try await connection.query(
                """
                WITH released AS (
                    UPDATE match_lease SET owner = '', expires_at = now()
                    WHERE match_id = \(matchId) AND owner = \(owner) AND owner <> '' RETURNING 1
                )
                SELECT pg_notify(\(channel), \(signal)) FROM released
                """,
                logger: logger
            ).count() > 0
        }
        if released { LeaseCounter.count("released") }
        return released
    }

    public func leasesHeldElsewhere(than owner: String) async throws(StoreError) -> LeasesElsewhere {
        let logger = self.logger
        let rows = try await withConnection("reading the other replicas' leases") { connection in
            // The expired ones by name, then one row with the time left on the first of the live ones.
            try await connection.query(
                """
                WITH others AS (
                    SELECT match_id, expires_at - now() AS remaining FROM match_lease
                    WHERE owner <> '' AND owner <> \(owner)
                )
                (SELECT match_id, NULL::float8 FROM others WHERE remaining <= interval '0' ORDER BY match_id)
                UNION ALL
                SELECT NULL, EXTRACT(EPOCH FROM min(remaining))::float8 FROM others WHERE remaining > interval '0'
                """,
                logger: logger
            ).collect((String?, Double?).self)
        }
        let next = rows.lazy.compactMap(\.1).first
        return LeasesElsewhere(
            expired: rows.compactMap(\.0), nextExpiry: next.map { .milliseconds(Int64(($0 * 1000).rounded(.up))) })
    }

    public func leases() async throws(StoreError) -> [MatchLease] {
        let logger = self.logger
        return try await withConnection("reading leases") { connection in
            try await connection.query(
                "SELECT match_id, owner, expires_at, generation FROM match_lease WHERE owner <> '' ORDER BY match_id",
                logger: logger
            ).collect((String, String, Date, Int).self).map {
                MatchLease(matchId: $0.0, owner: $0.1, expiresAt: $0.2.readBack, generation: $0.3)
            }
        }
    }
}
