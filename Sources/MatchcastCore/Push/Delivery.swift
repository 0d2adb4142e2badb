import Foundation

/// One push to one target (CONTRACTS §3). `id` is stable across retries of the same delivery.
public struct Delivery: Sendable, Hashable {
    public var id: String
    public var matchId: String
    public var activityId: String
    public var target: PushTarget
    public var apns: APNsHeaders
    /// Shared by every delivery of the same update: built once, never per device.
    public var payload: PushPayload

    public init(id: String, matchId: String, activityId: String, target: PushTarget, apns: APNsHeaders, payload: PushPayload) {
        self.id = id
        self.matchId = matchId
        self.activityId = activityId
        self.target = target
        self.apns = apns
        self.payload = payload
    }

    /// The delivery as one JSON object (no newline), keys in contract order, the payload's bytes embedded as they are.
    public func jsonBytes() -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(payload.bytes.count + 320)
        appendJSON(to: &out)
        return out
    }

    /// Appends the JSON object to `out`.
    public func appendJSON(to out: inout [UInt8]) {
        appendJSONHead(to: &out)
        appendJSONTail(to: &out)
    }

    /// Everything up to the target's value, which differs per delivery of an update.
    fileprivate borrowing func appendJSONHead(to out: inout [UInt8]) {
        out.append(contentsOf: #"{"id":"#.utf8)
        JSONText.appendString(id, to: &out)
        out.append(contentsOf: #","matchId":"#.utf8)
        JSONText.appendString(matchId, to: &out)
        out.append(contentsOf: #","activityId":"#.utf8)
        JSONText.appendString(activityId, to: &out)
        out.append(contentsOf: #","target":{"kind":"#.utf8)
        JSONText.appendString(target.kind.rawValue, to: &out)
        out.append(contentsOf: #","value":"#.utf8)
        JSONText.appendString(target.value, to: &out)
    }

    /// The rest, from the end of the target on: the same for every delivery sharing `apns` and `payload`.
    fileprivate borrowing func appendJSONTail(to out: inout [UInt8]) {
        out.append(contentsOf: #"},"apns":{"push-type":"#.utf8)
        JSONText.appendString(apns.pushType, to: &out)
        out.append(contentsOf: #","topic":"#.utf8)
        JSONText.appendString(apns.topic, to: &out)
        out.append(contentsOf: #","priority":"#.utf8)
        out.append(contentsOf: String(apns.priority).utf8)
        out.append(contentsOf: #","expiration":"#.utf8)
        out.append(contentsOf: String(apns.expiration).utf8)
        out.append(contentsOf: #"},"payload":"#.utf8)
        out.append(contentsOf: payload.bytes)
        out.append(UInt8(ascii: "}"))
    }
}

/// Writes deliveries as `Delivery.appendJSON` does, byte for byte, encoding the part after the
/// target (APNs headers and payload, the same for every delivery of one update) once per run of
/// deliveries that share it rather than once per delivery: the hot path of every sink.
public struct DeliveryJSONWriter {
    private var tailAPNs: APNsHeaders?
    private var tailPayload: [UInt8] = []
    private var tail: [UInt8] = []

    public init() {}

    /// Appends `delivery` as one JSON object (no newline).
    public mutating func append(_ delivery: borrowing Delivery, to out: inout [UInt8]) {
        delivery.appendJSONHead(to: &out)
        if tailAPNs != delivery.apns || !Self.identical(tailPayload, delivery.payload.bytes) {
            tail.removeAll(keepingCapacity: true)
            delivery.appendJSONTail(to: &tail)
            tailAPNs = delivery.apns
            tailPayload = delivery.payload.bytes
        }
        out.append(contentsOf: tail)
    }

    /// The same bytes: one buffer (every delivery of an update shares its payload's), or equal contents.
    private static func identical(_ lhs: [UInt8], _ rhs: [UInt8]) -> Bool {
        let same = lhs.withUnsafeBufferPointer { l in
            rhs.withUnsafeBufferPointer { r in l.baseAddress == r.baseAddress && l.count == r.count }
        }
        return same || lhs == rhs
    }
}

/// A delivery as read back from JSON (tests, webhook receivers, dead letters).
public struct DeliveryRecord: Sendable, Hashable, Codable {
    /// The payload as decoded.
    public struct Payload: Sendable, Hashable, Codable {
        public var aps: APS
    }

    public var id: String
    public var matchId: String
    public var activityId: String
    public var target: PushTarget
    public var apns: APNsHeaders
    public var payload: Payload
}

/// Minimal JSON text writing for the hand-built delivery line.
enum JSONText {
    static func appendString(_ string: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        // Ids, tokens and names need no escaping: copy them whole.
        let copied = string.utf8.withContiguousStorageIfAvailable { bytes -> Bool in
            guard !bytes.contains(where: needsEscape) else { return false }
            out.append(contentsOf: bytes)
            return true
        }
        if copied != true {
            for byte in string.utf8 { appendEscaped(byte, to: &out) }
        }
        out.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private static func appendEscaped(_ byte: UInt8, to out: inout [UInt8]) {
        switch byte {
        case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
        case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
        case UInt8(ascii: "\n"): out.append(contentsOf: [92, 110])
        case UInt8(ascii: "\r"): out.append(contentsOf: [92, 114])
        case UInt8(ascii: "\t"): out.append(contentsOf: [92, 116])
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            out.append(contentsOf: [92, 117, 48, 48, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        default: out.append(byte)
        }
    }
}
