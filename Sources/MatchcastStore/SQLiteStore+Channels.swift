import Foundation
internal import GRDB
import MatchcastCore

extension SQLiteStore: ChannelStore {
    public func saveChannel(_ record: MatchChannelRecord) async throws(StoreError) {
        try record.validate()
        let state = try JSONColumn.encode(record.channel, "broadcast channel of match '\(record.matchId)'")
        try await write("saving a broadcast channel") { db in
            try db.cachedStatement(sql: """
                    INSERT INTO matchChannel (matchId, channelId, phase, state, updatedAt) VALUES (?, ?, ?, ?, ?)
                    ON CONFLICT (matchId) DO UPDATE SET channelId = excluded.channelId, phase = excluded.phase,
                        state = excluded.state, updatedAt = excluded.updatedAt
                    """).execute(arguments: [
                        record.matchId, record.channelId, record.channel.phase.rawValue, state,
                        SQLiteDateText.text(record.updatedAt),
                    ])
        }
    }

    public func channel(matchId: String) async throws(StoreError) -> MatchChannelRecord? {
        let row = try await read("reading a broadcast channel") { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT matchId, state, updatedAt FROM matchChannel WHERE matchId = ?"),
                arguments: [matchId])
                .map { ($0["matchId"] as String, $0["state"] as String, $0["updatedAt"] as Date) }
        }
        return try row.map { row throws(StoreError) in try MatchChannelRecord(column: row) }
    }

    public func channels() async throws(StoreError) -> [MatchChannelRecord] {
        let rows = try await read("reading broadcast channels") { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT matchId, state, updatedAt FROM matchChannel ORDER BY matchId"))
                .map { ($0["matchId"] as String, $0["state"] as String, $0["updatedAt"] as Date) }
        }
        var records: [MatchChannelRecord] = []
        for row in rows { records.append(try MatchChannelRecord(column: row)) }
        return records
    }

    @discardableResult
    public func deleteChannel(matchId: String) async throws(StoreError) -> Bool {
        try await write("deleting a broadcast channel") { db in
            try db.cachedStatement(sql: "DELETE FROM matchChannel WHERE matchId = ?").execute(arguments: [matchId])
            return db.changesCount > 0
        }
    }
}
