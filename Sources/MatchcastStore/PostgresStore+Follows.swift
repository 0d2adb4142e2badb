import Foundation
import PostgresNIO

extension PostgresStore {
    public func addFollow(_ follow: FollowRecord) async throws(StoreError) -> Bool {
        let logger = self.logger
        // One statement, one round trip: a device that is not there fails the foreign key (a follow already there
        // implies its device).
        return try await writeForDevice(follow.deviceId, "adding a follow") { connection in
            try await connection.query(
                """
                INSERT INTO follow (device_id, match_id, created_at)
                VALUES (\(follow.deviceId), \(follow.matchId), \(follow.createdAt.storedPrecision))
                ON CONFLICT DO NOTHING RETURNING 1
                """,
                logger: logger
            ).count() > 0
        }
    }

    /// Two round trips for the batch: one statement adds every follow row (or none, when a device is gone), then the
    /// activities are saved as `saveActivities` saves them. Should that save fail, the follows stay: adding them again
    /// changes nothing.
    public func addFollows(_ follows: [NewFollow]) async throws(StoreError) -> [Date] {
        guard !follows.isEmpty else { return [] }
        let deviceIds = follows.map(\.follow.deviceId), matchIds = follows.map(\.follow.matchId)
        let milliseconds = follows.map { Int64(($0.follow.createdAt.timeIntervalSince1970 * 1000).rounded(.down)) }
        let logger = self.logger
        let rows = try await withConnection("adding \(follows.count) follows") { connection in
            try await connection.query(
                """
                WITH input AS (
                    SELECT * FROM unnest(\(deviceIds)::text[], \(matchIds)::text[], \(milliseconds)::bigint[])
                        WITH ORDINALITY AS t(device_id, match_id, ms, n)),
                missing AS (
                    SELECT input.device_id FROM input WHERE NOT EXISTS (SELECT 1 FROM device WHERE id = input.device_id)
                    LIMIT 1),
                added AS (
                    INSERT INTO follow (device_id, match_id, created_at)
                    SELECT DISTINCT ON (device_id, match_id) device_id, match_id, to_timestamp(ms::float8 / 1000)
                    FROM input WHERE NOT EXISTS (SELECT 1 FROM missing) ORDER BY device_id, match_id, n
                    ON CONFLICT DO NOTHING RETURNING device_id, match_id, created_at)
                SELECT (SELECT device_id FROM missing), COALESCE(added.created_at, follow.created_at)
                FROM input
                    LEFT JOIN added ON added.device_id = input.device_id AND added.match_id = input.match_id
                    LEFT JOIN follow ON follow.device_id = input.device_id AND follow.match_id = input.match_id
                ORDER BY input.n
                """,
                logger: logger
            ).collect((String?, Date?).self)
        }
        if let missing = rows.lazy.compactMap(\.0).first { throw StoreError.notFound("no device '\(missing)'") }
        guard rows.count == follows.count else {
            throw StoreError.database("adding \(follows.count) follows read back \(rows.count)")
        }
        try await saveActivities(follows.compactMap(\.activity))
        return zip(follows, rows).map { item, row in row.1?.readBack ?? item.follow.createdAt }
    }

    public func removeFollow(deviceId: String, matchId: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await withConnection("removing a follow") { connection in
            try await connection.query(
                "DELETE FROM follow WHERE device_id = \(deviceId) AND match_id = \(matchId) RETURNING 1", logger: logger
            ).count() > 0
        }
    }

    public func follows(deviceId: String) async throws(StoreError) -> [FollowRecord] {
        let logger = self.logger
        return try await withConnection("reading follows") { connection in
            try await connection.query(
                "SELECT device_id, match_id, created_at FROM follow WHERE device_id = \(deviceId) ORDER BY match_id",
                logger: logger
            ).collect((String, String, Date).self).map { FollowRecord(deviceId: $0.0, matchId: $0.1, createdAt: $0.2.readBack) }
        }
    }

    public func followers(matchId: String) async throws(StoreError) -> [FollowRecord] {
        let logger = self.logger
        return try await withConnection("reading followers") { connection in
            try await connection.query(
                "SELECT device_id, match_id, created_at FROM follow WHERE match_id = \(matchId) ORDER BY device_id",
                logger: logger
            ).collect((String, String, Date).self).map { FollowRecord(deviceId: $0.0, matchId: $0.1, createdAt: $0.2.readBack) }
        }
    }

    public func isFollowed(matchId: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await withConnection("reading whether a match is followed") { connection in
            try await connection.query("SELECT EXISTS (SELECT 1 FROM follow WHERE match_id = \(matchId))", logger: logger)
                .collect(Bool.self).first ?? false
        }
    }

    public func followedMatchIds() async throws(StoreError) -> [String] {
        let logger = self.logger
        return try await withConnection("reading followed matches") { connection in
            // A skip scan of the (match_id, device_id) index: one seek per match, not a read of every follow.
            try await connection.query("""
                WITH RECURSIVE followed(match_id) AS (
                    SELECT (SELECT min(match_id) FROM follow)
                    UNION ALL
                    SELECT (SELECT min(match_id) FROM follow WHERE match_id > followed.match_id)
                    FROM followed WHERE followed.match_id IS NOT NULL)
                SELECT match_id FROM followed WHERE match_id IS NOT NULL
                """, logger: logger)
                .collect(String.self).map { $0 }
        }
    }
}
