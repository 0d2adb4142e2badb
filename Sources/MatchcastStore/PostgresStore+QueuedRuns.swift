import Foundation
import MatchcastCore
import PostgresNIO

/// A save's deliveries as `matchcast_save` queues them (schema v7): one `outbox_chunk` row per run of consecutive
/// deliveries of one match, with each distinct payload of the run once and per delivery its id, activity, event,
/// target and payload's position. A fan-out chunk is one run: one payload for an update, one per activity for a
/// kick-off's starts.
///
/// Within one save the later of two deliveries for one (activity, event), or with one id, wins, as it would across
/// saves (where the server takes the older out of the queue).
struct PostgresQueuedRuns: Sendable {
    struct Run: Sendable {
        var matchId: String
        var firstActivityId: String
        var lastActivityId: String
        var pushTypes: [String] = []
        var topics: [String] = []
        var priorities: [Int32] = []
        var expirations: [Int64] = []
        var payloads: [ByteBuffer] = []
        var deliveryIds: [String] = []
        var activityIds: [String] = []
        var events: [String] = []
        var targetKinds: [String] = []
        /// As the deliveries keep them: written out from their digits (`PostgresTextArray`).
        var targetValues: [CompactToken] = []
        /// Each delivery's payload: its position in `payloads`, from 1.
        var payloadRefs: [Int32] = []

        /// `matchcast_save`'s parameters 23 to 36.
        func bind(into bindings: inout PostgresBindings) {
            bindings.append(matchId)
            bindings.append(firstActivityId)
            bindings.append(lastActivityId)
            bindings.append(pushTypes)
            bindings.append(topics)
            bindings.append(priorities)
            bindings.append(expirations)
            bindings.append(payloads)
            for column in [deliveryIds, activityIds, events, targetKinds] {
                bindings.append(PostgresTextArray(column))
            }
            bindings.append(PostgresTextArray(targetValues))
            bindings.append(PostgresInt32Array(payloadRefs))
        }

        /// The same parameters for a call that queues nothing.
        static func bindNone(into bindings: inout PostgresBindings) {
            for _ in 0..<3 { bindings.append(String?.none) }
            for _ in 0..<2 { bindings.append([String]()) }
            bindings.append([Int32]())
            bindings.append([Int64]())
            bindings.append([ByteBuffer]())
            for _ in 0..<5 { bindings.append([String]()) }
            bindings.append([Int32]())
        }
    }

    let runs: [Run]

    init(_ deliveries: [Delivery]) {
        guard !deliveries.isEmpty else {
            runs = []
            return
        }
        let events = Self.events(deliveries)
        let kept = Self.latest(deliveries, events)
        var runs: [Run] = []
        var payloadIndex: [ObjectIdentifier: Int32] = [:]
        var last: (common: ObjectIdentifier, ref: Int32)?
        for position in deliveries.indices where kept[position] {
            let common = deliveries[position].commonIdentity
            if last?.common != common, runs.last?.matchId != deliveries[position].matchId {
                let activityId = deliveries[position].activityId
                runs.append(Run(matchId: deliveries[position].matchId, firstActivityId: activityId,
                                lastActivityId: activityId))
                payloadIndex.removeAll(keepingCapacity: true)
                last = nil
            }
            let ref: Int32
            if let last, last.common == common {
                ref = last.ref
            } else if let known = payloadIndex[common] {
                ref = known
            } else {
                let apns = deliveries[position].apns
                runs[runs.count - 1].pushTypes.append(apns.pushType)
                runs[runs.count - 1].topics.append(apns.topic)
                runs[runs.count - 1].priorities.append(Int32(apns.priority))
                runs[runs.count - 1].expirations.append(Int64(apns.expiration))
                runs[runs.count - 1].payloads.append(ByteBuffer(bytes: deliveries[position].payload.bytes))
                ref = Int32(runs[runs.count - 1].payloads.count)
                payloadIndex[common] = ref
            }
            last = (common, ref)
            runs[runs.count - 1].append(deliveries[position], event: events[position].rawValue, payloadRef: ref)
        }
        self.runs = runs
    }

    /// By delivery: its event, read once per run of deliveries sharing a payload.
    private static func events(_ deliveries: [Delivery]) -> [ActivityEvent] {
        var events: [ActivityEvent] = []
        events.reserveCapacity(deliveries.count)
        var last: (common: ObjectIdentifier, event: ActivityEvent)?
        for position in deliveries.indices {
            let common = deliveries[position].commonIdentity
            if let last, last.common == common {
                events.append(last.event)
                continue
            }
            let event = deliveries[position].event
            last = (common, event)
            events.append(event)
        }
        return events
    }

    /// By delivery: whether it is queued, i.e. no later delivery of the save has its id or its (activity, event).
    private static func latest(_ deliveries: [Delivery], _ events: [ActivityEvent]) -> [Bool] {
        struct Key: Hashable {
            var activityId: String
            var event: ActivityEvent
        }
        var keys = Set<Key>(minimumCapacity: deliveries.count)
        var ids = Set<String>(minimumCapacity: deliveries.count)
        var kept = [Bool](repeating: true, count: deliveries.count)
        for position in deliveries.indices.reversed() {
            let fresh = keys.insert(Key(activityId: deliveries[position].activityId, event: events[position])).inserted
            let freshId = ids.insert(deliveries[position].id).inserted
            kept[position] = fresh && freshId
        }
        return kept
    }
}

extension PostgresQueuedRuns.Run {
    fileprivate mutating func append(_ delivery: borrowing Delivery, event: String, payloadRef: Int32) {
        if delivery.activityId < firstActivityId { firstActivityId = delivery.activityId }
        if delivery.activityId > lastActivityId { lastActivityId = delivery.activityId }
        deliveryIds.append(delivery.id)
        activityIds.append(delivery.activityId)
        events.append(event)
        targetKinds.append(delivery.target.kind.rawValue)
        targetValues.append(delivery.target.token)
        payloadRefs.append(payloadRef)
    }
}
