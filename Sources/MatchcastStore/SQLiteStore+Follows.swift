import Foundation
internal import GRDB

extension SQLiteStore {
    public func addFollow(_ follow: FollowRecord) async throws(StoreError) -> Bool {
        try await write("adding a follow") { db in try Self.insert(follow, db) }
    }

    /// True when the follow is new; `.notFound` when its device is not.
    private static func insert(_ follow: FollowRecord, _ db: Database) throws -> Bool {
        try requireDevice(follow.deviceId, db)
        try db.cachedStatement(sql: "INSERT INTO follow (deviceId, matchId, createdAt) VALUES (?, ?, ?) ON CONFLICT DO NOTHING")
            .execute(arguments: [follow.deviceId, follow.matchId, SQLiteDateText.text(follow.createdAt)])
        return db.changesCount > 0
    }

    /// One write of the group-commit queue: every follow row, then the activities, or nothing.
    public func addFollows(_ follows: [NewFollow]) async throws(StoreError) -> [Date] {
        guard !follows.isEmpty else { return [] }
        let activities = follows.compactMap(\.activity)
        let batch = try ActivityBatch(activities)
        return try await write("adding \(follows.count) follows") { [contentPruning] db in
            let stored = try db.cachedStatement(sql: "SELECT createdAt FROM follow WHERE deviceId = ? AND matchId = ?")
            var followedAt: [Date] = []
            followedAt.reserveCapacity(follows.count)
            for item in follows {
                let follow = item.follow
                let firstFollowed = try Self.insert(follow, db)
                    ? follow.createdAt
                    : try Date.fetchOne(stored, arguments: [follow.deviceId, follow.matchId])
                followedAt.append(firstFollowed ?? follow.createdAt)
            }
            if !activities.isEmpty { try batch.write(db, contentPruning) }
            return followedAt
        }
    }

    public func removeFollow(deviceId: String, matchId: String) async throws(StoreError) -> Bool {
        try await write("removing a follow") { db in
            try db.cachedStatement(sql: "DELETE FROM follow WHERE deviceId = ? AND matchId = ?")
                .execute(arguments: [deviceId, matchId])
            return db.changesCount > 0
        }
    }

    public func follows(deviceId: String) async throws(StoreError) -> [FollowRecord] {
        try await read("reading follows") { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM follow WHERE deviceId = ? ORDER BY matchId"),
                arguments: [deviceId])
                .map(FollowRecord.init(row:))
        }
    }

    public func followers(matchId: String) async throws(StoreError) -> [FollowRecord] {
        try await read("reading followers") { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM follow WHERE matchId = ? ORDER BY deviceId"),
                arguments: [matchId])
                .map(FollowRecord.init(row:))
        }
    }

    public func isFollowed(matchId: String) async throws(StoreError) -> Bool {
        try await read("reading whether a match is followed") { db in
            try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM follow WHERE matchId = ?)"),
                arguments: [matchId]) ?? false
        }
    }

    public func followedMatchIds() async throws(StoreError) -> [String] {
        try await read("reading followed matches") { db in
            // A skip scan of the matchId index: one seek per match, not a read of every follow.
            try String.fetchAll(db.cachedStatement(sql: """
                WITH RECURSIVE followed(matchId) AS (
                    SELECT (SELECT min(matchId) FROM follow)
                    UNION ALL
                    SELECT (SELECT min(matchId) FROM follow WHERE matchId > followed.matchId)
                    FROM followed WHERE followed.matchId IS NOT NULL)
                SELECT matchId FROM followed WHERE matchId IS NOT NULL
                """))
        }
    }
}
