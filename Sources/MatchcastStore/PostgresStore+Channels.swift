import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore: ChannelStore {
    public func saveChannel(_ record: MatchChannelRecord) async throws(StoreError) {
        try record.validate()
        let state = try JSONColumn.encode(record.channel, "broadcast channel of match '\(record.matchId)'")
        let logger = self.logger
        try await withConnection("saving a broadcast channel") { connection in
            try await connection.query(
                """
                INSERT INTO match_channel (match_id, channel_id, phase, state, updated_at)
                VALUES (\(record.matchId), \(record.channelId), \(record.channel.phase.rawValue), \(state),
                        \(record.updatedAt.storedPrecision))
                ON CONFLICT (match_id) DO UPDATE SET channel_id = excluded.channel_id, phase = excluded.phase,
                    state = excluded.state, updated_at = excluded.updated_at
                """,
                logger: logger
            ).consume()
        }
    }

    public func channel(matchId: String) async throws(StoreError) -> MatchChannelRecord? {
        let logger = self.logger
        let rows = try await withConnection("reading a broadcast channel") { connection in
            try await connection.query(
                "SELECT match_id, state, updated_at FROM match_channel WHERE match_id = \(matchId)", logger: logger
            ).collect((String, String, Date).self)
        }
        return try rows.first.map { row throws(StoreError) in try MatchChannelRecord(column: (row.0, row.1, row.2.readBack)) }
    }

    public func channels() async throws(StoreError) -> [MatchChannelRecord] {
        let logger = self.logger
        let rows = try await withConnection("reading broadcast channels") { connection in
            try await connection.query("SELECT match_id, state, updated_at FROM match_channel ORDER BY match_id", logger: logger)
                .collect((String, String, Date).self)
        }
        var records: [MatchChannelRecord] = []
        for row in rows { records.append(try MatchChannelRecord(column: (row.0, row.1, row.2.readBack))) }
        return records
    }

    @discardableResult
    public func deleteChannel(matchId: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await withConnection("deleting a broadcast channel") { connection in
            try await connection.query("DELETE FROM match_channel WHERE match_id = \(matchId) RETURNING 1", logger: logger).count() > 0
        }
    }
}
