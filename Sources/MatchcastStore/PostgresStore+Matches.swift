import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    public func saveMatch(_ record: MatchRecord) async throws(StoreError) {
        try record.validate()
        let snapshot = try JSONColumn.encode(record.snapshot, "snapshot of match '\(record.matchId)'")
        let sends = record.highPrioritySends.isEmpty ? nil : record.highPrioritySends.map(Int64.init)
        let logger = self.logger
        try await withConnection("saving a match") { connection in
            try await connection.query(
                """
                INSERT INTO match_state (match_id, snapshot, updated_at, high_priority_sends)
                VALUES (\(record.matchId), \(snapshot), \(record.updatedAt.storedPrecision), \(sends))
                ON CONFLICT (match_id) DO UPDATE SET snapshot = excluded.snapshot, updated_at = excluded.updated_at,
                    high_priority_sends = excluded.high_priority_sends
                """,
                logger: logger
            ).consume()
        }
    }

    public func match(id: String) async throws(StoreError) -> MatchRecord? {
        let logger = self.logger
        let rows = try await withConnection("reading a match") { connection in
            try await connection.query(
                "SELECT match_id, snapshot, updated_at, high_priority_sends FROM match_state WHERE match_id = \(id)",
                logger: logger
            ).collect((String, String, Date, [Int64]?).self)
        }
        return try rows.first.map { row throws(StoreError) in try MatchRecord(column: row) }
    }

    public func matches() async throws(StoreError) -> [MatchRecord] {
        let logger = self.logger
        let rows = try await withConnection("reading matches") { connection in
            try await connection.query(
                "SELECT match_id, snapshot, updated_at, high_priority_sends FROM match_state ORDER BY match_id", logger: logger
            ).collect((String, String, Date, [Int64]?).self)
        }
        var records: [MatchRecord] = []
        for row in rows { records.append(try MatchRecord(column: row)) }
        return records
    }

    @discardableResult
    public func deleteMatch(id: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await withConnection("deleting a match") { connection in
            try await connection.query("DELETE FROM match_state WHERE match_id = \(id) RETURNING 1", logger: logger).count() > 0
        }
    }
}

extension MatchRecord {
    /// A record from `match_id, snapshot, updated_at, high_priority_sends`.
    init(column row: (String, String, Date, [Int64]?)) throws(StoreError) {
        let snapshot = try JSONColumn.decode(MatchSnapshot.self, from: row.1, "snapshot of match '\(row.0)'")
        self.init(matchId: row.0, snapshot: snapshot, updatedAt: row.2.readBack, highPrioritySends: (row.3 ?? []).map(Int.init))
        do {
            try validate()
        } catch {
            throw StoreError.corrupt("stored match '\(row.0)': \(error.message)")
        }
    }
}
