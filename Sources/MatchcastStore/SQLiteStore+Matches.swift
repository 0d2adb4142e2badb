internal import GRDB

extension SQLiteStore {
    public func saveMatch(_ record: MatchRecord) async throws(StoreError) {
        let row = try SQLiteMatchRow(record)
        try await write("saving a match", mayWait: true) { db in try row.write(db) }
    }

    /// Unix seconds as a comma-separated list; nil for none.
    static func sendsColumn(_ sends: [Int]) -> String? {
        sends.isEmpty ? nil : sends.map(String.init).joined(separator: ",")
    }

    static func sends(column: String?, matchId: String) throws(StoreError) -> [Int] {
        guard let column, !column.isEmpty else { return [] }
        var sends: [Int] = []
        for part in column.split(separator: ",") {
            guard let second = Int(part) else { throw .corrupt("stored match '\(matchId)': priority-10 sends unreadable") }
            sends.append(second)
        }
        return sends
    }

    public func match(id: String) async throws(StoreError) -> MatchRecord? {
        try await read("reading a match") { db in
            try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM matchState WHERE matchId = ?"),
                arguments: [id]).map(MatchRecord.init(row:))
        }
    }

    public func matches() async throws(StoreError) -> [MatchRecord] {
        try await read("reading matches") { db in
            try Row.fetchAll(db.cachedStatement(sql: "SELECT * FROM matchState ORDER BY matchId")).map(MatchRecord.init(row:))
        }
    }

    @discardableResult
    public func deleteMatch(id: String) async throws(StoreError) -> Bool {
        try await write("deleting a match") { db in
            try db.cachedStatement(sql: "DELETE FROM matchState WHERE matchId = ?").execute(arguments: [id])
            return db.changesCount > 0
        }
    }
}

/// A match's row as `saveMatch` writes it, checked and encoded before the write (the writer only runs SQL): saved alone,
/// or with a fan-out's first chunk (`saveActivities(_:enqueue:share:match:)`).
struct SQLiteMatchRow: Sendable {
    let matchId: String
    let snapshot: String
    let updatedAt: String
    let sends: String?

    init(_ record: MatchRecord) throws(StoreError) {
        try record.validate()
        matchId = record.matchId
        snapshot = try JSONColumn.encode(record.snapshot, "snapshot of match '\(record.matchId)'")
        updatedAt = SQLiteDateText.text(record.updatedAt)
        sends = SQLiteStore.sendsColumn(record.highPrioritySends)
    }

    func write(_ db: Database) throws {
        let upsert = try SQLiteRawStatement(db, sql: """
            INSERT INTO matchState (matchId, snapshot, updatedAt, highPrioritySends) VALUES (?1, ?2, ?3, ?4)
            ON CONFLICT (matchId) DO UPDATE SET snapshot = excluded.snapshot, updatedAt = excluded.updatedAt,
                highPrioritySends = excluded.highPrioritySends
            """)
        upsert.bind(1, matchId)
        upsert.bind(2, snapshot)
        upsert.bind(3, updatedAt)
        upsert.bind(4, sends)
        try upsert.run()
    }
}
