import MatchcastCore
import Testing

/// The "duplicates only ever carry the same id" rule, checked over everything receivers got: a delivery seen
/// twice has the same content, and one state of one activity (event and timestamp) went out under one id.
/// Returns how many deliveries arrived more than once.
func auditDeliveryIds(_ received: [DeliveryRecord]) -> Int {
    var byId: [String: DeliveryRecord] = [:]
    var duplicates = 0
    for delivery in received {
        if let earlier = byId.updateValue(delivery, forKey: delivery.id) {
            duplicates += 1
            #expect(earlier == delivery, "delivery \(delivery.id) arrived twice with different content")
        }
    }
    var idsByState: [String: Set<String>] = [:]
    for delivery in received {
        idsByState["\(delivery.activityId)/\(delivery.payload.aps.event)/\(delivery.payload.aps.timestamp)", default: []]
            .insert(delivery.id)
    }
    let reissued = idsByState.filter { $0.value.count > 1 }
    #expect(reissued.isEmpty, "the same state went out under different ids: \(reissued.keys.sorted().prefix(5))")
    return duplicates
}
