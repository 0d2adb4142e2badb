import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    public func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] {
        guard limit > 0 else { return [] }
        return try await queuedDeliveries("reading queued deliveries", .limit(limit))
    }

    /// The queued deliveries of the whole queue (at most a limit) or of one match, oldest first: the rows queued
    /// before v6 (`outbox`, one per delivery), then the batches; the deliveries of one stored payload share it.
    func queuedDeliveries(_ what: String, _ selection: QueueSelection) async throws(StoreError) -> [Delivery] {
        let logger = self.logger
        return try await withConnection(what) { connection in
            var legacyBindings = PostgresBindings()
            let legacyClause: String
            switch selection {
            case .limit(let limit):
                legacyBindings.append(limit)
                legacyClause = "ORDER BY seq LIMIT $1"
            case .matchId(let matchId):
                legacyBindings.append(matchId)
                legacyClause = "WHERE match_id = $1 ORDER BY seq"
            }
            let rows = try await connection.query(
                PostgresQuery(
                    unsafeSQL: "SELECT delivery_id, activity_id, target_kind, target_value, payload_id, delivery FROM outbox "
                        + legacyClause,
                    binds: legacyBindings),
                logger: logger
            ).collect((String, String, String?, String?, Int64?, Data?).self)
            var templates = OutboxTemplates()
            try await Self.loadTemplates(Set(rows.compactMap(\.4)), into: &templates, connection, logger: logger)
            var deliveries: [Delivery] = []
            deliveries.reserveCapacity(rows.count)
            for row in rows {
                if let payloadId = row.4 {
                    guard let kind = row.2, let value = row.3 else {
                        throw StoreError.corrupt("queued delivery '\(row.0)' has no target")
                    }
                    deliveries.append(try templates.delivery(
                        id: row.0, activityId: row.1, kind: kind, value: value, payloadId: payloadId))
                } else {
                    // Queued before v5: the whole delivery, as it was written.
                    guard let bytes = row.5 else {
                        throw StoreError.corrupt("queued delivery '\(row.0)' has neither payload nor delivery")
                    }
                    deliveries.append(try Self.delivery(id: row.0, bytes, "queued delivery"))
                }
            }
            // The batches, a few at a time, until the limit.
            let limit: Int
            let matchId: String?
            switch selection {
            case .limit(let most): (limit, matchId) = (most, nil)
            case .matchId(let id): (limit, matchId) = (.max, id)
            }
            var after = Int64.min
            while deliveries.count < limit {
                let page = try await connection.query(
                    """
                    SELECT id, payload_id, entries FROM outbox_batch
                    WHERE id > \(after) AND (\(matchId)::text IS NULL OR match_id = \(matchId)) ORDER BY id LIMIT 16
                    """,
                    logger: logger
                ).collect((Int64, Int64, Data).self)
                let missing = Set(page.map(\.1)).filter { templates.byId[$0] == nil }
                try await Self.loadTemplates(missing, into: &templates, connection, logger: logger)
                for (id, payloadId, bytes) in page where deliveries.count < limit {
                    let batch = try OutboxBatchEntries(decoding: bytes, row: id)
                    try templates.append(batch, payloadId: payloadId, limit: limit - deliveries.count, to: &deliveries)
                    after = id
                }
                if page.count < 16 { break }
            }
            return deliveries
        }
    }

    /// Stored payloads, by id, read back as deliveries to share.
    static func loadTemplates(
        _ ids: Set<Int64>, into templates: inout OutboxTemplates, _ connection: PostgresConnection, logger: Logger
    ) async throws {
        guard !ids.isEmpty else { return }
        let rows = try await connection.query(
            """
            SELECT id, match_id, push_type, topic, priority, expiration, payload FROM outbox_payload
            WHERE id = ANY(\(Array(ids)))
            """,
            logger: logger
        ).collect((Int64, String, String, String, Int, Int64, Data).self)
        for row in rows {
            try templates.add(
                id: row.0, matchId: row.1, pushType: row.2, topic: row.3, priority: row.4, expiration: Int(row.5),
                payload: row.6)
        }
    }

    enum QueueSelection: Sendable {
        case limit(Int)
        case matchId(String)
    }

    public func removeQueuedDeliveries(ids: [String]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        let logger = self.logger
        try await transaction("removing \(ids.count) queued deliveries") { connection in
            try await PostgresQueuedBatch.remove(ids: ids, connection, logger: logger)
            // Payloads no queued delivery refers to: looked for once the outbox is empty or many have gathered. One
            // statement, so a payload another replica is queueing deliveries for is seen with them or not at all.
            let (payloads, queued) = try await connection.query(
                """
                SELECT (SELECT count(*) FROM outbox_payload),
                    EXISTS (SELECT 1 FROM outbox) OR EXISTS (SELECT 1 FROM outbox_batch)
                """,
                logger: logger
            ).collect((Int64, Bool).self).first ?? (Int64(0), true)
            if !queued || payloads > 4096 {
                try await connection.query(
                    """
                    DELETE FROM outbox_payload p WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload_id = p.id)
                        AND NOT EXISTS (SELECT 1 FROM outbox_batch b WHERE b.payload_id = p.id)
                    """,
                    logger: logger
                ).consume()
            }
        }
    }

    public func queuedDeliveryCount() async throws(StoreError) -> Int {
        let logger = self.logger
        return try await withConnection("counting queued deliveries") { connection in
            try await connection.query(
                "SELECT (SELECT count(*) FROM outbox) + (SELECT COALESCE(sum(count), 0) FROM outbox_batch)", logger: logger
            ).collect(Int.self).first ?? 0
        }
    }

    public func recordDeadLetters(_ letters: [DeadLetter]) async throws(StoreError) {
        guard !letters.isEmpty else { return }
        let rows = letters.map { ($0, Data($0.delivery.jsonBytes())) }
        let logger = self.logger
        try await transaction("recording \(letters.count) dead letters") { connection in
            for (letter, bytes) in rows {
                try await connection.query(
                    """
                    INSERT INTO dead_letter (delivery_id, sink, status, reason, delivery, recorded_at)
                    VALUES (\(letter.delivery.id), \(letter.sink), \(letter.status), \(letter.reason), \(bytes),
                            \(letter.recordedAt.storedPrecision))
                    ON CONFLICT (delivery_id, sink) DO UPDATE SET
                        status = excluded.status, reason = excluded.reason, delivery = excluded.delivery,
                        recorded_at = excluded.recorded_at
                    """,
                    logger: logger
                ).consume()
            }
        }
    }

    public func deadLetters(limit: Int) async throws(StoreError) -> [DeadLetter] {
        guard limit > 0 else { return [] }
        let logger = self.logger
        let rows = try await withConnection("reading dead letters") { connection in
            try await connection.query(
                """
                SELECT delivery_id, sink, status, reason, delivery, recorded_at FROM dead_letter
                ORDER BY recorded_at DESC, delivery_id, sink LIMIT \(limit)
                """,
                logger: logger
            ).collect((String, String, Int, String, Data, Date).self)
        }
        var letters: [DeadLetter] = []
        letters.reserveCapacity(rows.count)
        for row in rows {
            letters.append(DeadLetter(
                delivery: try Self.delivery(id: row.0, row.4, "dead letter"), sink: row.1, status: row.2, reason: row.3,
                recordedAt: row.5.readBack))
        }
        return letters
    }

    static func delivery(id: String, _ bytes: Data, _ what: String) throws(StoreError) -> Delivery {
        do {
            return try Delivery(jsonBytes: Array(bytes))
        } catch {
            throw .corrupt("stored \(what) '\(id)': \(error)")
        }
    }
}
