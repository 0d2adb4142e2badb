import Foundation
import MatchcastCore

/// Deliveries grouped by payload, as the SQL outboxes keep them: the match, headers and payload of each distinct
/// update once, and per delivery the index of its payload. Deliveries of one update share their payload by
/// reference (`Delivery.commonIdentity`), so grouping costs one pointer comparison per delivery.
struct QueuedPayloads: Sendable {
    /// By delivery: the index of its payload in `firsts`.
    let payloadOf: [Int]
    /// The first delivery of each distinct payload.
    let firsts: [Int]
    /// By delivery: its event (`start`, `update`, `end`).
    let events: [String]

    init(_ deliveries: [Delivery]) {
        var payloadOf: [Int] = []
        payloadOf.reserveCapacity(deliveries.count)
        var firsts: [Int] = []
        var events: [String] = []
        events.reserveCapacity(deliveries.count)
        var known: [ObjectIdentifier: Int] = [:]
        var last: (ObjectIdentifier, Int)?
        for position in deliveries.indices {
            let common = deliveries[position].commonIdentity
            if let last, last.0 == common {
                payloadOf.append(last.1)
                events.append(events[position - 1])
                continue
            }
            let index: Int
            if let found = known[common] {
                index = found
            } else {
                index = firsts.count
                firsts.append(position)
                known[common] = index
            }
            last = (common, index)
            payloadOf.append(index)
            events.append(deliveries[position].event.rawValue)
        }
        self.payloadOf = payloadOf
        self.firsts = firsts
        self.events = events
    }
}

/// Stored outbox payloads read back (by their row id) as deliveries for queued entries to share.
struct OutboxTemplates: Sendable {
    private(set) var byId: [Int64: Delivery] = [:]

    init() {}

    /// One `outbox_payload` row's columns; a payload that cannot be read is `.corrupt`.
    mutating func add(
        id: Int64, matchId: String, pushType: String, topic: String, priority: Int, expiration: Int, payload bytes: Data
    ) throws(StoreError) {
        let payload: PushPayload
        do {
            payload = try PushPayload(encoded: Array(bytes))
        } catch {
            throw .corrupt("stored outbox payload \(id): \(error)")
        }
        byId[id] = Delivery(
            id: "", matchId: matchId, activityId: "", target: PushTarget(kind: .updateToken, value: ""),
            apns: APNsHeaders(topic: topic, priority: priority, expiration: expiration, pushType: pushType),
            payload: payload)
    }

    func delivery(id: String, activityId: String, kind: String, value: String, payloadId: Int64) throws(StoreError) -> Delivery {
        guard let template = byId[payloadId] else {
            throw .corrupt("queued delivery '\(id)' refers to missing outbox payload \(payloadId)")
        }
        guard let kind = PushTarget.Kind(rawValue: kind) else {
            throw .corrupt("queued delivery '\(id)' has an unknown target kind")
        }
        return Delivery(id: id, activityId: activityId, target: PushTarget(kind: kind, value: value), sharingWith: template)
    }

    /// A batch's entries as deliveries sharing its payload, at most `limit`, appended to `deliveries`.
    func append(
        _ batch: OutboxBatchEntries, payloadId: Int64, limit: Int = .max, to deliveries: inout [Delivery]
    ) throws(StoreError) {
        for entry in batch.entries.prefix(limit) {
            deliveries.append(try delivery(
                id: entry.deliveryId, activityId: entry.activityId, kind: entry.targetKind, value: entry.targetValue,
                payloadId: payloadId))
        }
    }
}
