import Foundation
import MatchcastCore
import PostgresNIO

// Saving activities with their deliveries. One transaction per call, as always; inside it a batch is written with a
// handful of set-based statements (arrays bound once, `unnest` on the server), whatever its size: a fan-out chunk of
// 1,024 activities costs a few round trips, not four per activity. When the database refuses the batch as a whole
// (a token held by another open activity, an unknown device, the same activity twice), the call is redone row by row
// in a new transaction, which applies `saveActivities`' rules record after record and names what is wrong.

extension PostgresStore {
    public func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, fence: nil)
    }

    /// With a fence, the transaction first takes the leases' rows (`FOR SHARE`: a takeover waits for it, and it
    /// for a takeover) and writes nothing unless each is still the fence's owner and generation.
    func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery], fence: LeaseFence?) async throws(StoreError) {
        guard !records.isEmpty || !deliveries.isEmpty else { return }
        // Validated and taken apart before taking a connection: the transaction only runs SQL.
        let batch = try PostgresActivityBatch(records)
        let queued = PostgresQueuedBatch(deliveries)
        let logger = self.logger
        let what = deliveries.isEmpty
            ? (records.count == 1 ? "saving an activity" : "saving \(records.count) activities")
            : "saving \(records.count) activities with \(deliveries.count) deliveries"
        if batch.isBulkable {
            do {
                try await transaction(what) { connection in
                    if let fence { try await Self.checkFence(fence, connection, logger: logger) }
                    let contentIds = try await Self.contentIds(batch.contents.entries, connection, logger: logger)
                    try await batch.writeAll(contentIds: contentIds, connection, logger: logger)
                    try await queued.write(connection, logger: logger)
                }
                return
            } catch let error where error == .conflict || error == .notFound {
                // Refused as a whole: redone row by row below, which says which record and why.
            }
        }
        try await transaction(what) { connection in
            if let fence { try await Self.checkFence(fence, connection, logger: logger) }
            try await Self.requireDevices(records.map(\.deviceId), connection, logger: logger)
            let contentIds = try await Self.contentIds(batch.contents.entries, connection, logger: logger)
            try await batch.writeEach(contentIds: contentIds, connection, logger: logger)
            try await queued.write(connection, logger: logger)
        }
    }

    /// The id of each distinct content's row, added when the match has no row with that text yet.
    static func contentIds(
        _ entries: [StoredContents.Entry], _ connection: PostgresConnection, logger: Logger
    ) async throws -> [Int64] {
        guard !entries.isEmpty else { return [] }
        let matchIds = entries.map(\.matchId)
        let texts = entries.map(\.text)
        try await connection.query(
            """
            INSERT INTO content_state (match_id, content) SELECT * FROM unnest(\(matchIds)::text[], \(texts)::text[])
            ON CONFLICT (match_id, md5(content)) DO NOTHING
            """,
            logger: logger
        ).consume()
        let rows = try await connection.query(
            """
            SELECT u.n, c.id FROM unnest(\(matchIds)::text[], \(texts)::text[]) WITH ORDINALITY AS u(m, t, n)
            JOIN content_state c ON c.match_id = u.m AND md5(c.content) = md5(u.t) AND c.content = u.t
            """,
            logger: logger
        ).collect((Int64, Int64).self)
        var ids = [Int64](repeating: -1, count: entries.count)
        for (ordinal, id) in rows { ids[Int(ordinal) - 1] = id }
        guard !ids.contains(-1) else {
            throw StoreError.database("a content-state row vanished while it was saved")
        }
        return ids
    }
}

/// Activity records as arrays of columns, ready to bind.
struct PostgresActivityBatch: Sendable {
    let records: [ActivityRecord]
    let contents: StoredContents
    /// Each activity at most once: one `INSERT ... ON CONFLICT` may not touch a row twice.
    let isBulkable: Bool

    /// Nullable numbers travel in arrays as this value (`NULLIF` on the server): PostgresNIO binds no NULL elements.
    static let none = Int64.min

    init(_ records: [ActivityRecord]) throws(StoreError) {
        self.records = records
        contents = try StoredContents(records)
        var seen = Set<String>(minimumCapacity: records.count)
        var distinct = true
        for index in records.indices where !seen.insert(records[index].activityId).inserted {
            distinct = false
            break
        }
        isBulkable = distinct
    }

    private static let columns = """
        id, device_id, match_id, environment, phase, update_token, last_timestamp, sent_content, sent_at,
        sent_stale_date, started_at, held_content, held_staleness, end_held, final_content, channel_id, updated_at
        """

    private static let onConflict = """
        ON CONFLICT (id) DO UPDATE SET
            device_id = excluded.device_id, match_id = excluded.match_id, environment = excluded.environment,
            phase = excluded.phase, update_token = excluded.update_token, last_timestamp = excluded.last_timestamp,
            sent_content = excluded.sent_content, sent_at = excluded.sent_at, sent_stale_date = excluded.sent_stale_date,
            started_at = excluded.started_at, held_content = excluded.held_content,
            held_staleness = excluded.held_staleness, end_held = excluded.end_held,
            final_content = excluded.final_content, channel_id = excluded.channel_id, updated_at = excluded.updated_at
        """

    /// Every record in one statement.
    func writeAll(contentIds: [Int64], _ connection: PostgresConnection, logger: Logger) async throws {
        guard !records.isEmpty else { return }
        var ids: [String] = [], devices: [String] = [], matches: [String] = [], environments: [String] = []
        var phases: [String] = [], tokens: [String] = [], channels: [String] = [], ended: [Bool] = []
        var timestamps: [Int64] = [], sent: [Int64] = [], sentAt: [Int64] = [], stale: [Int64] = []
        var startedAt: [Int64] = [], held: [Int64] = [], staleness: [Int64] = [], final: [Int64] = []
        var updatedAt: [Date] = []
        ids.reserveCapacity(records.count)
        func id(_ ref: Int32) -> Int64 { ref < 0 ? Self.none : contentIds[Int(ref)] }
        for position in records.indices {
            let stored = contents.stored[position]
            let refs = contents.refs[position]
            ids.append(records[position].activityId)
            devices.append(records[position].deviceId)
            matches.append(records[position].matchId)
            environments.append(records[position].environment.rawValue)
            phases.append(stored.phase.rawValue)
            tokens.append(stored.updateToken ?? "")
            timestamps.append(Int64(stored.lastTimestamp))
            sent.append(id(refs.sent))
            sentAt.append(stored.sentAt.map(Int64.init) ?? Self.none)
            stale.append(stored.sentStaleDate.map(Int64.init) ?? Self.none)
            startedAt.append(stored.startedAt.map(Int64.init) ?? Self.none)
            held.append(id(refs.held))
            staleness.append(stored.heldStaleness ?? Self.none)
            ended.append(stored.endHeld)
            final.append(id(refs.final))
            channels.append(stored.channelId ?? "")
            updatedAt.append(records[position].updatedAt.storedPrecision)
        }
        let none = Self.none
        var bindings = PostgresBindings()
        for array in [ids, devices, matches, environments, phases, tokens] { bindings.append(array) }
        for array in [timestamps, sent, sentAt, stale, startedAt, held, staleness] { bindings.append(array) }
        bindings.append(ended)
        bindings.append(final)
        bindings.append(channels)
        bindings.append(updatedAt)
        try await connection.query(
            PostgresQuery(
                unsafeSQL: """
                    INSERT INTO activity (\(Self.columns))
                    SELECT id, device, match, environment, phase, NULLIF(token, ''), stamp, NULLIF(sent, \(none)),
                        NULLIF(sent_at, \(none)), NULLIF(stale, \(none)), NULLIF(started_at, \(none)),
                        NULLIF(held, \(none)), NULLIF(staleness, \(none)), end_held, NULLIF(final, \(none)),
                        NULLIF(channel, ''), updated_at
                    FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[],
                        $8::bigint[], $9::bigint[], $10::bigint[], $11::bigint[], $12::bigint[], $13::bigint[],
                        $14::boolean[], $15::bigint[], $16::text[], $17::timestamptz[])
                        AS u(id, device, match, environment, phase, token, stamp, sent, sent_at, stale, started_at,
                            held, staleness, end_held, final, channel, updated_at)
                    \(Self.onConflict)
                    """,
                binds: bindings),
            logger: logger
        ).consume()
    }

    /// Record after record, each checked against the store as the records before it left it.
    func writeEach(contentIds: [Int64], _ connection: PostgresConnection, logger: Logger) async throws {
        func id(_ ref: Int32) -> Int64? { ref < 0 ? nil : contentIds[Int(ref)] }
        for position in records.indices {
            let record = records[position]
            let stored = contents.stored[position]
            let refs = contents.refs[position]
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
            let sentAt = stored.sentAt.map(Int64.init), stale = stored.sentStaleDate.map(Int64.init)
            let startedAt = stored.startedAt.map(Int64.init)
            let (sent, held, final) = (id(refs.sent), id(refs.held), id(refs.final))
            try await connection.query(
                """
                INSERT INTO activity (id, device_id, match_id, environment, phase, update_token, last_timestamp,
                    sent_content, sent_at, sent_stale_date, started_at, held_content, held_staleness, end_held,
                    final_content, channel_id, updated_at)
                VALUES (\(record.activityId), \(record.deviceId), \(record.matchId), \(record.environment.rawValue),
                    \(stored.phase.rawValue), \(stored.updateToken), \(Int64(stored.lastTimestamp)), \(sent), \(sentAt),
                    \(stale), \(startedAt), \(held), \(stored.heldStaleness), \(stored.endHeld), \(final),
                    \(stored.channelId), \(record.updatedAt.storedPrecision))
                ON CONFLICT (id) DO UPDATE SET
                    device_id = excluded.device_id, match_id = excluded.match_id, environment = excluded.environment,
                    phase = excluded.phase, update_token = excluded.update_token, last_timestamp = excluded.last_timestamp,
                    sent_content = excluded.sent_content, sent_at = excluded.sent_at,
                    sent_stale_date = excluded.sent_stale_date, started_at = excluded.started_at,
                    held_content = excluded.held_content, held_staleness = excluded.held_staleness,
                    end_held = excluded.end_held, final_content = excluded.final_content,
                    channel_id = excluded.channel_id, updated_at = excluded.updated_at
                """,
                logger: logger
            ).consume()
        }
    }
}

/// Deliveries for the outbox: each distinct payload once (`outbox_payload`), and the deliveries in `outbox_batch` rows,
/// one per run of consecutive deliveries sharing a payload (a fan-out chunk is one row), their ids, activities, events
/// and targets packed in `entries` (`OutboxBatchEntries`). Rows queued before v6 stay in `outbox`, one per delivery.
struct PostgresQueuedBatch: Sendable {
    let deliveries: [Delivery]
    private let payloads: QueuedPayloads

    init(_ deliveries: [Delivery]) {
        self.deliveries = deliveries
        payloads = QueuedPayloads(deliveries)
    }

    /// The payload rows, one per distinct payload: their ids, in `payloads` order, and whether `outbox` still holds
    /// rows queued before v6 (asked in the same statement, to spare a round trip when it holds none).
    private func insertPayloads(_ connection: PostgresConnection, logger: Logger) async throws -> (ids: [Int64], legacy: Bool) {
        var ids: [Int64] = []
        var legacy = false
        for first in payloads.firsts {
            let delivery = deliveries[first]
            let apns = delivery.apns
            let row = try await connection.query(
                """
                INSERT INTO outbox_payload (match_id, push_type, topic, priority, expiration, payload)
                VALUES (\(delivery.matchId), \(apns.pushType), \(apns.topic), \(apns.priority), \(Int64(apns.expiration)),
                    \(Data(delivery.payload.bytes)))
                RETURNING id, EXISTS (SELECT 1 FROM outbox)
                """,
                logger: logger
            ).collect((Int64, Bool).self).first
            guard let (id, queued) = row else { throw StoreError.database("an outbox payload got no id") }
            ids.append(id)
            legacy = legacy || queued
        }
        return (ids, legacy)
    }

    /// Queues every delivery, inside the caller's transaction: a newer delivery for the same (activity, event), or
    /// with an id already queued, replaces the queued one and is queued anew (later in the order).
    func write(_ connection: PostgresConnection, logger: Logger) async throws {
        guard !deliveries.isEmpty else { return }
        let runs = OutboxBatchRuns(deliveries, payloads)
        // What this save replaces, before its own rows are there to be found.
        try await Self.supersede(runs, connection, logger: logger)
        let (payloadIds, legacy) = try await insertPayloads(connection, logger: logger)
        if legacy {
            let events = payloads.events
            try await connection.query(
                """
                DELETE FROM outbox
                WHERE (activity_id, event) IN (SELECT * FROM unnest(\(deliveries.map(\.activityId))::text[], \(events)::text[]))
                    OR delivery_id = ANY(\(deliveries.map(\.id)))
                """,
                logger: logger
            ).consume()
        }
        for run in runs.runs {
            let entries = try run.entries.encoded()
            try await connection.query(
                """
                INSERT INTO outbox_batch (match_id, payload_id, count, first_activity_id, last_activity_id, entries)
                VALUES (\(run.matchId), \(payloadIds[run.payload]), \(run.entries.entries.count), \(run.firstActivityId),
                    \(run.lastActivityId), \(entries))
                """,
                logger: logger
            ).consume()
        }
    }

    /// Takes out of the queued batches what `runs` replaces. Only batches whose activity-id range meets the save's are
    /// read (the chunks of one fan-out, walked in id order, pass each other unread), locked (`FOR UPDATE`, in id
    /// order, as `remove` locks them) so a concurrent removal and this rewrite do not undo each other.
    private static func supersede(_ runs: OutboxBatchRuns, _ connection: PostgresConnection, logger: Logger) async throws {
        let candidates = try await connection.query(
            """
            SELECT id, entries FROM outbox_batch WHERE last_activity_id >= \(runs.low) AND first_activity_id <= \(runs.high)
            ORDER BY id FOR UPDATE
            """,
            logger: logger
        ).collect((Int64, Data).self)
        for (id, bytes) in candidates {
            let batch = try OutboxBatchEntries(decoding: bytes, row: id)
            let kept = batch.entries.filter { !runs.replaces($0) }
            if kept.count != batch.entries.count { try await replace(batch: id, with: kept, connection, logger: logger) }
        }
    }

    /// Rewrites a batch row with the deliveries it keeps, or deletes it when none is left.
    static func replace(
        batch id: Int64, with kept: [OutboxBatchEntries.Entry], _ connection: PostgresConnection, logger: Logger
    ) async throws {
        let batch = OutboxBatchEntries(kept)
        guard let (first, last) = batch.activityRange else {
            try await connection.query("DELETE FROM outbox_batch WHERE id = \(id)", logger: logger).consume()
            return
        }
        let entries = try batch.encoded()
        try await connection.query(
            """
            UPDATE outbox_batch SET count = \(kept.count), first_activity_id = \(first), last_activity_id = \(last),
                entries = \(entries)
            WHERE id = \(id)
            """,
            logger: logger
        ).consume()
    }

    /// Removes the deliveries with these ids, wherever they are queued, inside the caller's transaction. Batches are
    /// read from the oldest on, a few at a time, as the relay removes what it sent, which is the head of the queue;
    /// the scan stops once every id is found.
    static func remove(ids: [String], _ connection: PostgresConnection, logger: Logger) async throws {
        try await connection.query("DELETE FROM outbox WHERE delivery_id = ANY(\(ids))", logger: logger).consume()
        var wanted = Set(ids)
        var after = Int64.min
        while !wanted.isEmpty {
            let rows = try await connection.query(
                "SELECT id, entries FROM outbox_batch WHERE id > \(after) ORDER BY id LIMIT 8 FOR UPDATE", logger: logger
            ).collect((Int64, Data).self)
            for (id, bytes) in rows {
                after = id
                guard !wanted.isEmpty else { break }
                let batch = try OutboxBatchEntries(decoding: bytes, row: id)
                var kept: [OutboxBatchEntries.Entry] = []
                kept.reserveCapacity(batch.entries.count)
                for entry in batch.entries where wanted.remove(entry.deliveryId) == nil { kept.append(entry) }
                if kept.count != batch.entries.count { try await replace(batch: id, with: kept, connection, logger: logger) }
            }
            if rows.count < 8 { break }
        }
    }
}
