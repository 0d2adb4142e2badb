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
