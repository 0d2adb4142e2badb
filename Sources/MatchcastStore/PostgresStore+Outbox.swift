import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    public func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery]) async throws(StoreError) {
        try await saveActivities(records, enqueue: deliveries, fence: nil)
    }

    /// With a fence, the transaction first takes the leases' rows (`FOR SHARE`: a takeover waits for it, and it
    /// for a takeover) and writes nothing unless each is still the fence's owner and generation.
    func saveActivities(_ records: [ActivityRecord], enqueue deliveries: [Delivery], fence: LeaseFence?) async throws(StoreError) {
        guard !records.isEmpty || !deliveries.isEmpty else { return }
        // Validate and encode before taking a connection: the transaction only runs SQL.
        var rows: [ActivityRow] = []
        rows.reserveCapacity(records.count)
        for record in records { rows.append(try ActivityRow(record)) }
        let queued = deliveries.map(QueuedRow.init)
        let logger = self.logger
        let what = deliveries.isEmpty
            ? (records.count == 1 ? "saving an activity" : "saving \(records.count) activities")
            : "saving \(records.count) activities with \(deliveries.count) deliveries"
        try await transaction(what) { [rows] connection in
            if let fence { try await Self.checkFence(fence, connection, logger: logger) }
            try await Self.requireDevices(rows.map(\.record.deviceId), connection, logger: logger)
            for row in rows {
                try await Self.upsert(row, connection, logger: logger)
            }
            for row in queued {
                // A newer delivery for the same (activity, event) replaces the queued one and queues anew
                // (a new `seq`); so does one whose id is already queued.
                try await connection.query(
                    """
                    DELETE FROM outbox
                    WHERE (activity_id = \(row.activityId) AND event = \(row.event)) OR delivery_id = \(row.deliveryId)
                    """,
                    logger: logger
                ).consume()
                try await connection.query(
                    """
                    INSERT INTO outbox (activity_id, event, delivery_id, delivery, match_id)
                    VALUES (\(row.activityId), \(row.event), \(row.deliveryId), \(row.bytes), \(row.matchId))
                    """,
                    logger: logger
                ).consume()
            }
        }
    }

    public func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] {
        guard limit > 0 else { return [] }
        let logger = self.logger
        let rows = try await withConnection("reading queued deliveries") { connection in
            try await connection.query(
                "SELECT delivery_id, delivery FROM outbox ORDER BY seq LIMIT \(limit)", logger: logger
            ).collect((String, Data).self)
        }
        var deliveries: [Delivery] = []
        deliveries.reserveCapacity(rows.count)
        for (id, bytes) in rows { deliveries.append(try Self.delivery(id: id, bytes, "queued delivery")) }
        return deliveries
    }

    public func removeQueuedDeliveries(ids: [String]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        let logger = self.logger
        try await withConnection("removing \(ids.count) queued deliveries") { connection in
            try await connection.query("DELETE FROM outbox WHERE delivery_id = ANY(\(ids))", logger: logger).consume()
        }
    }

    public func queuedDeliveryCount() async throws(StoreError) -> Int {
        let logger = self.logger
        return try await withConnection("counting queued deliveries") { connection in
            try await connection.query("SELECT COUNT(*) FROM outbox", logger: logger).collect(Int.self).first ?? 0
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

    /// A queued delivery ready for SQL.
    private struct QueuedRow: Sendable {
        var activityId: String
        var matchId: String
        var event: String
        var deliveryId: String
        var bytes: Data

        init(_ delivery: Delivery) {
            activityId = delivery.activityId
            matchId = delivery.matchId
            event = delivery.event.rawValue
            deliveryId = delivery.id
            bytes = Data(delivery.jsonBytes())
        }
    }

    static func delivery(id: String, _ bytes: Data, _ what: String) throws(StoreError) -> Delivery {
        do {
            return try Delivery(jsonBytes: Array(bytes))
        } catch {
            throw .corrupt("stored \(what) '\(id)': \(error)")
        }
    }
}
