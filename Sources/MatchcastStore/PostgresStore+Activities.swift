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
            "WHERE update_token = $1 ORDER BY open DESC, updated_at DESC, id LIMIT 1", updateToken
        ).first
    }

    @discardableResult
    public func deleteActivity(id: String) async throws(StoreError) -> Bool {
        let logger = self.logger
        return try await withConnection("deleting an activity") { connection in
            try await connection.query("DELETE FROM activity_row WHERE id = \(id) RETURNING 1", logger: logger).count() > 0
        }
    }

    public func openActivities() async throws(StoreError) -> [ActivityRecord] {
        try await activities("reading open activities", "WHERE open ORDER BY id", nil)
    }

    // MARK: Reading

    typealias ActivityColumns = (
        String, String, String, String, String, String?, Int64, Int64?, Int64?, Int64?, Int64?, Int64?, Int64?, Bool,
        Int64?, String?, Date
    )

    /// The activities a fixed clause selects, with at most one bound text (`$1`), and the contents they refer to,
    /// each read once. The two reads are two statements, and a fan-out may prune the match's contents between them
    /// (schema v12): a read that finds a content gone reads the activities again, which then refer to the ones kept.
    /// `afterRows` runs between the two reads, with the attempt's number (tests).
    func activities(
        _ what: String, _ clause: String, _ argument: String?,
        afterRows: (@Sendable (Int) async throws -> Void)? = nil
    ) async throws(StoreError) -> [ActivityRecord] {
        let logger = self.logger
        let (rows, contentRows) = try await withConnection(what) { connection in
            var bindings = PostgresBindings()
            if let argument { bindings.append(argument) }
            var attempt = 0
            while true {
                attempt += 1
                let rows = try await connection.query(
                    PostgresQuery(
                        unsafeSQL: """
                            SELECT id, device_id, match_id, environment, phase, update_token, last_timestamp, sent_content,
                                sent_at, sent_stale_date, started_at, held_content, held_staleness, end_held, final_content,
                                channel_id, updated_at
                            FROM activity
                            """ + " " + clause,
                        binds: bindings),
                    logger: logger
                ).collect(ActivityColumns.self)
                var ids = Set<Int64>()
                for row in rows {
                    for id in [row.7, row.11, row.14] { if let id { ids.insert(id) } }
                }
                guard !ids.isEmpty else { return (rows, [(Int64, String)]()) }
                try await afterRows?(attempt)
                let contents = try await connection.query(
                    "SELECT id, content FROM content_state WHERE id = ANY(\(Array(ids)))", logger: logger
                ).collect((Int64, String).self)
                // Still missing after three reads: not a pruning, and the records say which.
                if contents.count == ids.count || attempt == 3 { return (rows, contents) }
            }
        }
        var contents = LoadedContents()
        for (id, text) in contentRows { try contents.add(id: id, text: text) }
        var records: [ActivityRecord] = []
        records.reserveCapacity(rows.count)
        for row in rows { records.append(try ActivityRecord(columns: row, contents: contents)) }
        return records
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
    /// A record from `PostgresStore.ActivityColumns`.
    init(columns row: PostgresStore.ActivityColumns, contents: LoadedContents) throws(StoreError) {
        let id = row.0
        guard let phase = ActivityLifecycle.Phase(rawValue: row.4) else {
            throw .corrupt("stored activity '\(id)' has an unknown phase")
        }
        let stored = ActivityLifecycle.Stored(
            phase: phase, updateToken: row.5.map { CompactToken($0) }, lastTimestamp: Int(row.6), sent: try contents.box(row.7, of: id),
            sentAt: row.8.map(Int.init), sentStaleDate: row.9.map(Int.init), startedAt: row.10.map(Int.init),
            held: try contents.box(row.11, of: id), heldStaleness: row.12, endHeld: row.13,
            final: try contents.box(row.14, of: id), channelId: row.15)
        self.init(
            deviceId: row.1, environment: try APNsEnvironment(column: row.3),
            lifecycle: ActivityLifecycle(activityId: id, matchId: row.2, stored: stored), updatedAt: row.16.readBack)
        do {
            try validate()
        } catch {
            throw StoreError.corrupt("stored activity '\(id)': \(error.message)")
        }
    }
}
