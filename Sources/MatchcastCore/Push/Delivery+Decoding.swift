import Foundation

extension Delivery {
    /// The event of the payload (`start`, `update`, `end`): with `activityId`, the key under which an outbox keeps
    /// one queued delivery (a newer update replaces a queued older one; a start and an end are kept).
    public var event: ActivityEvent { payload.aps.event }

    /// Reads back a delivery written by `jsonBytes()` (an outbox row, a dead letter), keeping the payload's bytes
    /// exactly as they were sent. Throws `InputError` naming what is wrong.
    public init(jsonBytes bytes: [UInt8]) throws(InputError) {
        let record: DeliveryRecord
        do {
            record = try JSONDecoder().decode(DeliveryRecord.self, from: Data(bytes))
        } catch {
            throw InputError(field: "", reason: "not a delivery object (\(error))")
        }
        // `jsonBytes()` writes the payload last: `..."payload":<bytes>}`. Before it come only the header fields,
        // whose strings are escaped, so the first unescaped `"payload":` is the key.
        let key = Array(#","payload":"#.utf8)
        guard let start = bytes.firstRange(of: key)?.upperBound, bytes.last == UInt8(ascii: "}"), start < bytes.count - 1
        else {
            throw InputError(field: "payload", reason: "not the last field of delivery '\(record.id)'")
        }
        let payload = try PushPayload(encoded: Array(bytes[start..<(bytes.count - 1)]))
        self.init(
            id: record.id, matchId: record.matchId, activityId: record.activityId, target: record.target,
            apns: record.apns, payload: payload)
    }
}

extension PushPayload {
    /// A payload read back from the bytes that were sent (never re-encoded, so they stay identical).
    public init(encoded bytes: [UInt8]) throws(InputError) {
        struct Body: Decodable { let aps: APS }
        guard bytes.count <= Self.maxBytes else {
            throw InputError(field: "payload", reason: "\(bytes.count) bytes, over \(Self.maxBytes)")
        }
        do {
            aps = try JSONDecoder().decode(Body.self, from: Data(bytes)).aps
        } catch {
            throw InputError(field: "payload", reason: "not an {\"aps\": ...} object (\(error))")
        }
        self.bytes = bytes
        wasShortened = false
        startTemplate = nil
    }
}

extension DeliveryRecord {
    /// The delivery's fields with its payload as decoded (for JSON views such as the dead-letter listing).
    public init(_ delivery: Delivery) {
        self.init(
            id: delivery.id, matchId: delivery.matchId, activityId: delivery.activityId, target: delivery.target,
            apns: delivery.apns, payload: Payload(aps: delivery.payload.aps))
    }
}
