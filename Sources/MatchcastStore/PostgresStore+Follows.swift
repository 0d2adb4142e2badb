import Foundation
import PostgresNIO

extension PostgresStore {
    public func addFollow(_ follow: FollowRecord) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await transaction("adding a follow") { connection in
            try await Self.requireDevice(follow.deviceId, connection, logger: logger)
            return try await connection.query(
                """
                INSERT INTO follow (device_id, match_id, created_at)
                VALUES (\(follow.deviceId), \(follow.matchId), \(follow.createdAt.storedPrecision))
                ON CONFLICT DO NOTHING RETURNING 1
                """,
                logger: logger
            ).count() > 0
        }
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
