import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    public func saveActivity(_ record: ActivityRecord) async throws(StoreError) {
        try await saveActivities([record])
    }

    public func saveActivities(_ records: [ActivityRecord]) async throws(StoreError) {
        try await saveActivities(records, enqueue: [])
    }

    public func activity(id: String) async throws(StoreError) -> ActivityRecord? {
        try await activities("reading an activity", "WHERE id = $1", id).first
    }

    public func activities(matchId: String) async throws(StoreError) -> [ActivityRecord] {
        try await activities("reading a match's activities", "WHERE match_id = $1 ORDER BY id", matchId)
    }

    public func activities(deviceId: String) async throws(StoreError) -> [ActivityRecord] {
        try await activities("reading a device's activities", "WHERE device_id = $1 ORDER BY id", deviceId)
    }

    public func activity(updateToken: String) async throws(StoreError) -> ActivityRecord? {
        try await activities(
            "finding an activity by update token",
            "WHERE update_token = $1 ORDER BY phase = 'ended', updated_at DESC, id LIMIT 1", updateToken
        ).first
    }

    @discardableResult
    public func deleteActivity(id: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await withConnection("deleting an activity") { connection in
            try await connection.query("DELETE FROM activity WHERE id = \(id) RETURNING 1", logger: logger).count() > 0
        }
    }

    public func openActivities() async throws(StoreError) -> [ActivityRecord] {
        try await activities("reading open activities", "WHERE phase <> 'ended' ORDER BY id", nil)
    }

    // MARK: Rows

    /// The activities a fixed clause selects, with at most one bound text (`$1`).
    private func activities(_ what: String, _ clause: String, _ argument: String?) async throws(StoreError) -> [ActivityRecord] {
        let logger = self.logger
        let rows = try await withConnection(what) { connection in
            var bindings = PostgresBindings()
            if let argument { bindings.append(argument) }
            return try await connection.query(
                PostgresQuery(
                    unsafeSQL: "SELECT id, device_id, match_id, environment, lifecycle, updated_at FROM activity " + clause,
                    binds: bindings),
                logger: logger
            ).collect((String, String, String, String, String, Date).self)
        }
        var records: [ActivityRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows { records.append(try ActivityRecord(column: row)) }
        return records
    }

    /// An activity ready for SQL: validated, the lifecycle already encoded.
    struct ActivityRow: Sendable {
        var record: ActivityRecord
        var lifecycle: String

        init(_ record: ActivityRecord) throws(StoreError) {
            try record.validate()
            self.record = record
            lifecycle = try JSONColumn.encode(record.lifecycle, "lifecycle of activity '\(record.activityId)'")
        }
    }

    /// Inserts or replaces one activity, inside the caller's transaction.
    static func upsert(_ row: ActivityRow, _ connection: PostgresConnection, logger: Logger) async throws {
        let record = row.record
        if record.isOpen, let token = record.updateToken {
            // The unique index on open tokens is the backstop for two writers at once; this names the holder.
            let holder = try await connection.query(
                """
                SELECT id FROM activity
                WHERE update_token = \(token) AND phase <> 'ended' AND id <> \(record.activityId) LIMIT 1
                """,
                logger: logger
            ).collect(String.self).first
            if let holder {
                throw StoreError.conflict("update token \(StoreError.redacted(token)) is held by open activity '\(holder)'")
            }
        }
        try await connection.query(
            """
            INSERT INTO activity (id, device_id, match_id, environment, phase, update_token, lifecycle, updated_at)
            VALUES (\(record.activityId), \(record.deviceId), \(record.matchId), \(record.environment.rawValue),
                    \(record.phase.rawValue), \(record.updateToken), \(row.lifecycle), \(record.updatedAt.storedPrecision))
            ON CONFLICT (id) DO UPDATE SET
                device_id = excluded.device_id, match_id = excluded.match_id, environment = excluded.environment,
                phase = excluded.phase, update_token = excluded.update_token, lifecycle = excluded.lifecycle,
                updated_at = excluded.updated_at
            """,
            logger: logger
        ).consume()
    }

    /// Checks that every device exists, in one query, naming the first missing one.
    static func requireDevices(_ ids: [String], _ connection: PostgresConnection, logger: Logger) async throws {
        let wanted = Array(Set(ids))
        guard !wanted.isEmpty else { return }
        let rows: [String] = try await connection.query(
            "SELECT id FROM device WHERE id = ANY(\(wanted))", logger: logger
        ).collect(String.self)
        let found = Set(rows)
        if let missing = ids.first(where: { !found.contains($0) }) {
            throw StoreError.notFound("no device '\(missing)'")
        }
    }
}

extension ActivityRecord {
    /// A record from `id, device_id, match_id, environment, lifecycle, updated_at`.
    init(column row: (String, String, String, String, String, Date)) throws(StoreError) {
        let lifecycle = try JSONColumn.decode(ActivityLifecycle.self, from: row.4, "lifecycle of activity '\(row.0)'")
        self.init(
            activityId: row.0, deviceId: row.1, matchId: row.2, environment: try APNsEnvironment(column: row.3),
            lifecycle: lifecycle, updatedAt: row.5.readBack)
        do {
            try validate()
        } catch {
            throw StoreError.corrupt("stored activity '\(row.0)': \(error.message)")
        }
    }
}
