import Foundation
import MatchcastCore
import PostgresNIO

extension PostgresStore {
    public func queuedDeliveries(limit: Int) async throws(StoreError) -> [Delivery] {
        guard limit > 0 else { return [] }
        return try await queuedDeliveries("reading queued deliveries", "ORDER BY seq LIMIT $1", .limit(limit))
    }

    /// The queued deliveries a fixed clause selects (`$1`: the bound value), the deliveries of one stored payload
    /// sharing it.
    func queuedDeliveries(_ what: String, _ clause: String, _ argument: QueueArgument) async throws(StoreError) -> [Delivery] {
        let logger = self.logger
        let (rows, payloadRows) = try await withConnection(what) { connection in
            var bindings = PostgresBindings()
            switch argument {
            case .limit(let limit): bindings.append(limit)
            case .matchId(let matchId): bindings.append(matchId)
            }
            let rows = try await connection.query(
                PostgresQuery(
                    unsafeSQL: "SELECT delivery_id, activity_id, target_kind, target_value, payload_id, delivery FROM outbox "
                        + clause,
                    binds: bindings),
                logger: logger
            ).collect((String, String, String?, String?, Int64?, Data?).self)
            let ids = Array(Set(rows.compactMap(\.4)))
            guard !ids.isEmpty else { return (rows, [(Int64, String, String, String, Int, Int64, Data)]()) }
            let payloads = try await connection.query(
                """
                SELECT id, match_id, push_type, topic, priority, expiration, payload FROM outbox_payload
                WHERE id = ANY(\(ids))
                """,
                logger: logger
            ).collect((Int64, String, String, String, Int, Int64, Data).self)
            return (rows, payloads)
        }
        var templates: [Int64: Delivery] = [:]
        for row in payloadRows {
            let payload: PushPayload
            do {
                payload = try PushPayload(encoded: Array(row.6))
            } catch {
                throw .corrupt("stored outbox payload \(row.0): \(error)")
            }
            templates[row.0] = Delivery(
                id: "", matchId: row.1, activityId: "", target: PushTarget(kind: .updateToken, value: ""),
                apns: APNsHeaders(topic: row.3, priority: row.4, expiration: Int(row.5), pushType: row.2), payload: payload)
        }
        var deliveries: [Delivery] = []
        deliveries.reserveCapacity(rows.count)
        for row in rows {
            if let payloadId = row.4 {
                guard let template = templates[payloadId], let kindText = row.2, let kind = PushTarget.Kind(rawValue: kindText),
                      let value = row.3 else {
                    throw .corrupt("queued delivery '\(row.0)' has no usable target or payload")
                }
                deliveries.append(Delivery(
                    id: row.0, activityId: row.1, target: PushTarget(kind: kind, value: value), sharingWith: template))
            } else {
                // Queued before v5: the whole delivery, as it was written.
                guard let bytes = row.5 else { throw .corrupt("queued delivery '\(row.0)' has neither payload nor delivery") }
                deliveries.append(try Self.delivery(id: row.0, bytes, "queued delivery"))
            }
        }
        return deliveries
    }

    enum QueueArgument: Sendable {
        case limit(Int)
        case matchId(String)
    }

    public func removeQueuedDeliveries(ids: [String]) async throws(StoreError) {
        guard !ids.isEmpty else { return }
        let logger = self.logger
        try await withConnection("removing \(ids.count) queued deliveries") { connection in
            try await connection.query("DELETE FROM outbox WHERE delivery_id = ANY(\(ids))", logger: logger).consume()
            // Payloads no queued delivery refers to: looked for once the outbox is empty or many have gathered. One
            // statement, so a payload another replica is queueing deliveries for is seen with them or not at all.
            let (payloads, queued) = try await connection.query(
                "SELECT (SELECT count(*) FROM outbox_payload), EXISTS (SELECT 1 FROM outbox)", logger: logger
            ).collect((Int64, Bool).self).first ?? (Int64(0), true)
            if !queued || payloads > 4096 {
                try await connection.query(
                    "DELETE FROM outbox_payload p WHERE NOT EXISTS (SELECT 1 FROM outbox o WHERE o.payload_id = p.id)",
                    logger: logger
                ).consume()
            }
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

    static func delivery(id: String, _ bytes: Data, _ what: String) throws(StoreError) -> Delivery {
        do {
            return try Delivery(jsonBytes: Array(bytes))
        } catch {
            throw .corrupt("stored \(what) '\(id)': \(error)")
        }
    }
}
