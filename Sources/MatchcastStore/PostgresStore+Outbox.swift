import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    public func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] {
        guard limit > 0 else { return [] }
        return try await queuedDeliveries("reading queued deliveries", .limit(limit))
    }

    /// The queued deliveries of the whole queue (at most a limit) or of one match, oldest first: the rows queued
    /// before v6 (`outbox`, one per delivery), then the chunks; the deliveries of one stored payload share it.
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
                        id: row.0, activityId: row.1, kind: kind, token: CompactToken(value), payloadId: payloadId))
                } else {
                    // Queued before v5: the whole delivery, as it was written.
                    guard let bytes = row.5 else {
                        throw StoreError.corrupt("queued delivery '\(row.0)' has neither payload nor delivery")
                    }
                    deliveries.append(try Self.delivery(id: row.0, bytes, "queued delivery"))
                }
            }
            // The chunks, a few at a time, until the limit.
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
                    SELECT id, match_id, push_types, topics, priorities, expirations, payloads, delivery_ids, activity_ids,
                        target_kinds, target_values, payload_refs
                    FROM outbox_chunk
                    WHERE id > \(after) AND (\(matchId)::text IS NULL OR match_id = \(matchId)) ORDER BY id LIMIT 16
                    """,
                    logger: logger
                ).collect(ChunkColumns.self)
                for row in page where deliveries.count < limit {
                    try Self.append(chunk: row, limit: limit - deliveries.count, to: &deliveries)
                    after = row.0
                }
                if page.count < 16 { break }
            }
            return deliveries
        }
    }

    /// An `outbox_chunk` row as read: id, match, the payloads' push types, topics, priorities, expirations and bytes,
    /// then per entry its delivery id, activity, target kind and value, and payload's position.
    typealias ChunkColumns = (
        Int64, String, [String], [String], [Int32], [Int64], [ByteBuffer], [String], [String], [String], [String],
        [Int32]
    )

    /// A chunk's entries as deliveries sharing the chunk's payloads, at most `limit`, appended to `deliveries`.
    static func append(chunk row: ChunkColumns, limit: Int, to deliveries: inout [Delivery]) throws(StoreError) {
        let (id, matchId, pushTypes, topics, priorities, expirations) = (row.0, row.1, row.2, row.3, row.4, row.5)
        let (payloads, ids, activities, kinds, values, refs) = (row.6, row.7, row.8, row.9, row.10, row.11)
        let count = ids.count
        guard pushTypes.count == payloads.count, topics.count == payloads.count, priorities.count == payloads.count,
              expirations.count == payloads.count, activities.count == count, kinds.count == count,
              values.count == count, refs.count == count
        else { throw .corrupt("outbox chunk \(id): its deliveries cannot be read") }
        // The payloads by position (from 1), each read once and shared by the entries that refer to it.
        var templates = OutboxTemplates()
        for index in payloads.indices {
            try templates.add(
                id: Int64(index + 1), matchId: matchId, pushType: pushTypes[index], topic: topics[index],
                priority: Int(priorities[index]), expiration: Int(expirations[index]),
                payload: Data(payloads[index].readableBytesView))
        }
        for index in 0..<min(count, limit) {
            deliveries.append(try templates.delivery(
                id: ids[index], activityId: activities[index], kind: kinds[index], token: CompactToken(values[index]),
                payloadId: Int64(refs[index])))
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

    /// One statement (`matchcast_unqueue`): the rows queued before v6 (and the payloads only they used), then the
    /// chunks from the head of the queue, where what the relay just sent is, until every id is found.
    /// A few ids (the relay's batch of a few deliveries) go with the removals of others that come within
    /// `removals.linger` when removals come often (`PostgresWriteGroup`); many go at once, alone.
    public func removeQueuedDeliveries(ids: [String]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        let logger = self.logger
        let turn = await removals.turn(for: ids, mayWait: ids.count <= Self.smallWrite) { groups async throws(StoreError) in
            var seen: Set<String> = []
            let all = groups.flatMap(\.self).filter { seen.insert($0).inserted }
            try await self.withConnection("removing \(all.count) queued deliveries") { connection in
                for try await _ in try await connection.execute(UnqueueStatement(ids: all), logger: logger) {}
            }
            return Array(repeating: .success(()), count: groups.count)
        }
        switch turn {
        case .done(let outcome): try outcome.get()
        case .alone:
            try await withConnection("removing \(ids.count) queued deliveries") { connection in
                for try await _ in try await connection.execute(UnqueueStatement(ids: ids), logger: logger) {}
            }
        }
    }

    /// `matchcast_unqueue`, prepared once per connection.
    struct UnqueueStatement: PostgresPreparedStatement {
        static let sql = "SELECT matchcast_unqueue($1::text[])"
        typealias Row = Void
        var ids: [String]

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings(capacity: 1)
            bindings.append(PostgresTextArray(ids))
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws {}
    }

    public func queuedDeliveryCount() async throws(StoreError) -> Int {
        let logger = self.logger
        return try await withConnection("counting queued deliveries") { connection in
            try await connection.query(
                "SELECT (SELECT count(*) FROM outbox) + (SELECT COALESCE(sum(count), 0) FROM outbox_chunk)", logger: logger
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
