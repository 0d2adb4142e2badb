import Foundation
import MatchcastCore

/// Deliveries grouped by payload, as the SQL outboxes keep them: the match, headers and payload of each distinct
/// update once, and per delivery the index of its payload. Deliveries of one update share their payload by
/// reference (`Delivery.commonIdentity`), so grouping costs one pointer comparison per delivery. The starts of a
/// kick-off cut from one template (`PushPayload.startTemplate`) with the same match and headers are one group too:
/// the store keeps the template, and each start's payload is the template with its activity id put in.
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
        // The previous delivery's common part and payload index: a delivery sharing its common part (the deliveries
        // of one update) joins it on one pointer comparison, its payload not looked at.
        var last: (common: ObjectIdentifier, index: Int)?
        for position in deliveries.indices {
            let common = deliveries[position].commonIdentity
            if let last, last.common == common {
                payloadOf.append(last.index)
                events.append(events[position - 1])
                continue
            }
            let group = Self.group(deliveries, position, firsts: firsts, known: known)
            let index: Int
            if let found = known[group] {
                index = found
            } else {
                index = firsts.count
                firsts.append(position)
                known[group] = index
            }
            last = (common, index)
            payloadOf.append(index)
            events.append(deliveries[position].event.rawValue)
        }
        self.payloadOf = payloadOf
        self.firsts = firsts
        self.events = events
    }

    /// What the delivery at `position` is grouped by: its start template when it has one and shares match and
    /// headers with the template's group (or starts it), its common part otherwise.
    private static func group(
        _ deliveries: [Delivery], _ position: Int, firsts: [Int], known: [ObjectIdentifier: Int]
    ) -> ObjectIdentifier {
        guard let template = deliveries[position].startTemplate else { return deliveries[position].commonIdentity }
        let identity = ObjectIdentifier(template)
        guard let group = known[identity] else { return identity }
        let first = firsts[group]
        if deliveries[first].matchId == deliveries[position].matchId, deliveries[first].apns == deliveries[position].apns {
            return identity
        }
        return deliveries[position].commonIdentity
    }
}

/// Stored outbox payloads read back (by their row id) as deliveries for queued entries to share.
struct OutboxTemplates: Sendable {
    private(set) var byId: [Int64: Delivery] = [:]
    /// The payloads kept as a kick-off's start template: each entry's payload is cut from it with its activity id.
    private var starts: [Int64: StartPayloadTemplate] = [:]

    init() {}

    /// One `outbox_payload` row's columns; a payload that cannot be read is `.corrupt`. `activityIdAt`, when given,
    /// says the payload is a start template with its activity id stand-in at that byte.
    mutating func add(
        id: Int64, matchId: String, pushType: String, topic: String, priority: Int, expiration: Int, payload bytes: Data,
        activityIdAt: Int? = nil
    ) throws(StoreError) {
        let payload: PushPayload
        do {
            if let activityIdAt {
                let template = try StartPayloadTemplate(encoded: Array(bytes), activityIdOffset: activityIdAt)
                starts[id] = template
                payload = try PushPayload(encoded: template.encoded)
            } else {
                payload = try PushPayload(encoded: Array(bytes))
            }
        } catch {
            throw .corrupt("stored outbox payload \(id): \(error)")
        }
        byId[id] = Delivery(
            id: "", matchId: matchId, activityId: "", target: PushTarget(kind: .updateToken, value: ""),
            apns: APNsHeaders(topic: topic, priority: priority, expiration: expiration, pushType: pushType),
            payload: payload)
    }

    func delivery(id: String, activityId: String, kind: String, token: CompactToken, payloadId: Int64) throws(StoreError) -> Delivery {
        guard let template = byId[payloadId] else {
            throw .corrupt("queued delivery '\(id)' refers to missing outbox payload \(payloadId)")
        }
        guard let kind = PushTarget.Kind(rawValue: kind) else {
            throw .corrupt("queued delivery '\(id)' has an unknown target kind")
        }
        let target = PushTarget(kind: kind, token: token)
        guard let start = starts[payloadId] else {
            return Delivery(id: id, activityId: activityId, target: target, sharingWith: template)
        }
        guard let payload = start.payload(activityId: activityId) else {
            throw .corrupt("queued start '\(id)' has an activity id its template cannot hold")
        }
        return Delivery(id: id, matchId: template.matchId, activityId: activityId, target: target, apns: template.apns, payload: payload)
    }

    /// A batch's entries as deliveries sharing its payload, at most `limit`, appended to `deliveries`.
    func append(
        _ batch: OutboxBatchEntries, payloadId: Int64, limit: Int = .max, to deliveries: inout [Delivery]
    ) throws(StoreError) {
        for entry in batch.entries.prefix(limit) {
            deliveries.append(try delivery(
                id: entry.deliveryId, activityId: entry.activityId, kind: entry.targetKind, token: entry.targetValue,
                payloadId: payloadId))
        }
    }
}
