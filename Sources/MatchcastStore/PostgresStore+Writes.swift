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
        if batch.isBulkable, queued.isBulkable {
            do {
                try await transaction(what) { connection in
                    if let fence { try await Self.checkFence(fence, connection, logger: logger) }
                    let contentIds = try await Self.contentIds(batch.contents.entries, connection, logger: logger)
                    try await batch.writeAll(contentIds: contentIds, connection, logger: logger)
                    try await queued.writeAll(connection, logger: logger)
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
            try await queued.writeEach(connection, logger: logger)
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

/// Deliveries for the outbox: each distinct payload once (`outbox_payload`), per delivery its id, activity, event and
/// target.
struct PostgresQueuedBatch: Sendable {
    let deliveries: [Delivery]
    private let payloads: QueuedPayloads
    private var events: [String] { payloads.events }
    /// Each (activity, event) and each id at most once: one `INSERT` may then queue them all.
    let isBulkable: Bool

    init(_ deliveries: [Delivery]) {
        self.deliveries = deliveries
        payloads = QueuedPayloads(deliveries)
        let events = payloads.events
        var keys = Set<String>(minimumCapacity: deliveries.count * 2)
        var distinct = true
        for position in deliveries.indices {
            let id = deliveries[position].id
            let key = deliveries[position].activityId + "\u{0}" + events[position]
            if !keys.insert("i" + id).inserted || !keys.insert("k" + key).inserted {
                distinct = false
                break
            }
        }
        isBulkable = distinct
    }

    /// The payload rows, one per distinct payload: their ids, in `payloads` order.
    private func insertPayloads(_ connection: PostgresConnection, logger: Logger) async throws -> [Int64] {
        var ids: [Int64] = []
        for first in payloads.firsts {
            let delivery = deliveries[first]
            let apns = delivery.apns
            let id = try await connection.query(
                """
                INSERT INTO outbox_payload (match_id, push_type, topic, priority, expiration, payload)
                VALUES (\(delivery.matchId), \(apns.pushType), \(apns.topic), \(apns.priority), \(Int64(apns.expiration)),
                    \(Data(delivery.payload.bytes)))
                RETURNING id
                """,
                logger: logger
            ).collect(Int64.self).first
            guard let id else { throw StoreError.database("an outbox payload got no id") }
            ids.append(id)
        }
        return ids
    }

    /// Queues every delivery: a newer delivery for the same (activity, event), or with an id already queued,
    /// replaces the queued one and queues anew (a new `seq`).
    func writeAll(_ connection: PostgresConnection, logger: Logger) async throws {
        guard !deliveries.isEmpty else { return }
        let payloadIds = try await insertPayloads(connection, logger: logger)
        var activities: [String] = [], ids: [String] = [], matches: [String] = []
        var kinds: [String] = [], values: [String] = [], refs: [Int64] = []
        activities.reserveCapacity(deliveries.count)
        for position in deliveries.indices {
            activities.append(deliveries[position].activityId)
            ids.append(deliveries[position].id)
            matches.append(deliveries[position].matchId)
            kinds.append(deliveries[position].target.kind.rawValue)
            values.append(deliveries[position].target.value)
            refs.append(payloadIds[payloads.payloadOf[position]])
        }
        try await connection.query(
            """
            DELETE FROM outbox WHERE (activity_id, event) IN (SELECT * FROM unnest(\(activities)::text[], \(events)::text[]))
                OR delivery_id = ANY(\(ids))
            """,
            logger: logger
        ).consume()
        try await connection.query(
            """
            INSERT INTO outbox (activity_id, event, delivery_id, match_id, target_kind, target_value, payload_id)
            SELECT * FROM unnest(\(activities)::text[], \(events)::text[], \(ids)::text[], \(matches)::text[],
                \(kinds)::text[], \(values)::text[], \(refs)::bigint[])
            """,
            logger: logger
        ).consume()
    }

    /// One delivery after the other, for a batch that queues the same key twice.
    func writeEach(_ connection: PostgresConnection, logger: Logger) async throws {
        guard !deliveries.isEmpty else { return }
        let payloadIds = try await insertPayloads(connection, logger: logger)
        for position in deliveries.indices {
            let delivery = deliveries[position]
            let (event, payload) = (events[position], payloadIds[payloads.payloadOf[position]])
            try await connection.query(
                """
                DELETE FROM outbox
                WHERE (activity_id = \(delivery.activityId) AND event = \(event)) OR delivery_id = \(delivery.id)
                """,
                logger: logger
            ).consume()
            try await connection.query(
                """
                INSERT INTO outbox (activity_id, event, delivery_id, match_id, target_kind, target_value, payload_id)
                VALUES (\(delivery.activityId), \(event), \(delivery.id), \(delivery.matchId),
                    \(delivery.target.kind.rawValue), \(delivery.target.value), \(payload))
                """,
                logger: logger
            ).consume()
        }
    }
}
