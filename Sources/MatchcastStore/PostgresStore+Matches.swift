import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    /// A match's state, sent with the saves of other matches that come within `matchSaves.linger` when saves come
    /// often (`PostgresWriteGroup`): each poll that changes a match saves it, and many matches change at once.
    public func saveMatch(_ record: MatchRecord) async throws(StoreError) {
        let row = try MatchRow(record)
        let logger = self.logger
        let turn = await matchSaves.turn(for: row, mayWait: true) { rows async throws(StoreError) in
            try await self.withConnection("saving \(rows.count) matches") { connection in
                try await Self.save(MatchRow.lastOfEach(rows), connection, logger: logger)
            }
            return Array(repeating: .success(()), count: rows.count)
        }
        switch turn {
        case .done(let outcome): try outcome.get()
        case .alone:
            try await withConnection("saving a match") { connection in
                try await connection.query(
                    """
                    INSERT INTO match_state (match_id, snapshot, updated_at, high_priority_sends)
                    VALUES (\(row.matchId), \(row.snapshot), \(row.updatedAt), \(row.highPrioritySends))
                    ON CONFLICT (match_id) DO UPDATE SET snapshot = excluded.snapshot, updated_at = excluded.updated_at,
                        high_priority_sends = excluded.high_priority_sends
                    """,
                    logger: logger
                ).consume()
            }
        }
    }

    /// A match's row as `saveMatch` writes it.
    struct MatchRow: Sendable {
        var matchId: String
        var snapshot: String
        var updatedAt: Date
        var highPrioritySends: [Int64]?

        /// The record checked and encoded.
        init(_ record: MatchRecord) throws(StoreError) {
            try record.validate()
            matchId = record.matchId
            snapshot = try JSONColumn.encode(record.snapshot, "snapshot of match '\(record.matchId)'")
            updatedAt = record.updatedAt.storedPrecision
            highPrioritySends = record.highPrioritySends.isEmpty ? nil : record.highPrioritySends.map(Int64.init)
        }

        /// The `INSERT` of rows bound by `bind(_:into:)` at `$first` to `$first + 3`.
        static func upsertSQL(from first: Int) -> String {
            """
            INSERT INTO match_state (match_id, snapshot, updated_at, high_priority_sends)
            SELECT m, s, u, NULLIF(h, '')::bigint[]
            FROM unnest($\(first)::text[], $\(first + 1)::text[], $\(first + 2)::timestamptz[], $\(first + 3)::text[])
                AS r(m, s, u, h)
            ON CONFLICT (match_id) DO UPDATE SET snapshot = excluded.snapshot, updated_at = excluded.updated_at,
                high_priority_sends = excluded.high_priority_sends
            """
        }

        /// Four parameters: the rows' columns as arrays, the sends as array literals in text (`""`: none).
        static func bind(_ rows: [MatchRow], into bindings: inout PostgresBindings) {
            bindings.append(PostgresTextArray(rows.map(\.matchId)))
            bindings.append(PostgresTextArray(rows.map(\.snapshot)))
            bindings.append(rows.map(\.updatedAt))
            bindings.append(PostgresTextArray(rows.map { row in
                row.highPrioritySends.map { "{" + $0.map(String.init).joined(separator: ",") + "}" } ?? ""
            }))
        }

        /// The last row of each match, by match id (one statement may not update a row twice, and rows are locked in
        /// one order by every statement).
        static func lastOfEach(_ rows: [MatchRow]) -> [MatchRow] {
            var position: [String: Int] = [:]
            var kept: [MatchRow] = []
            for row in rows {
                if let index = position[row.matchId] {
                    kept[index] = row
                } else {
                    position[row.matchId] = kept.count
                    kept.append(row)
                }
            }
            return kept.sorted { $0.matchId < $1.matchId }
        }
    }

    /// Several matches' rows in one statement. The high-priority sends go as array literals in text (`""`: none),
    /// since a `bigint[]` per row does not unnest.
    static func save(_ rows: [MatchRow], _ connection: PostgresConnection, logger: Logger) async throws {
        var bindings = PostgresBindings(capacity: 4)
        MatchRow.bind(rows, into: &bindings)
        try await connection.query(PostgresQuery(unsafeSQL: MatchRow.upsertSQL(from: 1), binds: bindings), logger: logger)
            .consume()
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
