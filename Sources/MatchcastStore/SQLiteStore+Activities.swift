internal import GRDB

extension SQLiteStore {
    public func saveActivity(_ record: ActivityRecord) async throws(StoreError) {
        try await saveActivities([record])
    }

    public func saveActivities(_ records: [ActivityRecord]) async throws(StoreError) {
        guard !records.isEmpty else { return }
        let rows = try Self.rows(records)
        try await write(records.count == 1 ? "saving an activity" : "saving \(records.count) activities") { [rows] db in
            for row in rows {
                try Self.upsert(row, db)
            }
        }
    }

    /// Encoded before taking the write lock: the transaction only runs SQL.
    static func rows(_ records: [ActivityRecord]) throws(StoreError) -> [ActivityRow] {
        var rows: [ActivityRow] = []
        rows.reserveCapacity(records.count)
        for record in records {
            try record.validate()
            rows.append(ActivityRow(
                record: record, lifecycle: try JSONColumn.encode(record.lifecycle, "lifecycle of activity '\(record.activityId)'")))
        }
        return rows
    }

    public func activity(id: String) async throws(StoreError) -> ActivityRecord? {
        try await read("reading an activity") { db in
            try Row.fetchOne(db, sql: "SELECT * FROM activity WHERE id = ?", arguments: [id]).map(ActivityRecord.init(row:))
        }
    }

    public func activities(matchId: String) async throws(StoreError) -> [ActivityRecord] {
        try await read("reading a match's activities") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM activity WHERE matchId = ? ORDER BY id", arguments: [matchId])
                .map(ActivityRecord.init(row:))
        }
    }

    public func activities(deviceId: String) async throws(StoreError) -> [ActivityRecord] {
        try await read("reading a device's activities") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM activity WHERE deviceId = ? ORDER BY id", arguments: [deviceId])
                .map(ActivityRecord.init(row:))
        }
    }

    public func activity(updateToken: String) async throws(StoreError) -> ActivityRecord? {
        try await read("finding an activity by update token") { db in
            try Row.fetchOne(
                db,
                sql: """
                    SELECT * FROM activity WHERE updateToken = ?
                    ORDER BY phase = 'ended', updatedAt DESC, id LIMIT 1
                    """,
                arguments: [updateToken]
            ).map(ActivityRecord.init(row:))
        }
    }

    @discardableResult
    public func deleteActivity(id: String) async throws(StoreError) -> Bool {
        try await write("deleting an activity") { db in
            try db.execute(sql: "DELETE FROM activity WHERE id = ?", arguments: [id])
            return db.changesCount > 0
        }
    }

    public func openActivities() async throws(StoreError) -> [ActivityRecord] {
        try await read("reading open activities") { db in
            try Row.fetchAll(db, sql: "SELECT * FROM activity WHERE phase <> 'ended' ORDER BY id").map(ActivityRecord.init(row:))
        }
    }

    // MARK: Writing one row

    /// An activity ready for SQL: the lifecycle already encoded.
    struct ActivityRow: Sendable {
        var record: ActivityRecord
        var lifecycle: String
    }

    static func upsert(_ row: ActivityRow, _ db: Database) throws {
        let record = row.record
        try requireDevice(record.deviceId, db)
        if record.isOpen, let token = record.updateToken,
           let holder = try String.fetchOne(
               db,
               sql: "SELECT id FROM activity WHERE updateToken = ? AND phase <> 'ended' AND id <> ? LIMIT 1",
               arguments: [token, record.activityId]) {
            throw StoreError.conflict("update token \(StoreError.redacted(token)) is held by open activity '\(holder)'")
        }
        try db.execute(
            sql: """
                INSERT INTO activity (id, deviceId, matchId, environment, phase, updateToken, lifecycle, updatedAt)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (id) DO UPDATE SET
                    deviceId = excluded.deviceId, matchId = excluded.matchId, environment = excluded.environment,
                    phase = excluded.phase, updateToken = excluded.updateToken, lifecycle = excluded.lifecycle,
                    updatedAt = excluded.updatedAt
                """,
            arguments: [
                record.activityId, record.deviceId, record.matchId, record.environment.rawValue,
                record.phase.rawValue, record.updateToken, row.lifecycle, record.updatedAt,
            ])
    }
}
