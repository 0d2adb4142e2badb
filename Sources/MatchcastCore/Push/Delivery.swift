import Foundation

/// One push to one target (docs/formats.md, "Deliveries"). `id` is stable across retries of the same delivery.
public struct Delivery: Sendable, Hashable {
    public var id: String
    public var activityId: String
    public var target: PushTarget
    /// What every delivery of one update has in common (match, headers, payload), behind one reference:
    /// copying a delivery (outbox, relay, sinks) is four retains instead of eight.
    @usableFromInline var common: Common

    public var matchId: String {
        get { common.matchId }
        set { common = Common(matchId: newValue, apns: common.apns, payload: common.payload) }
    }

    public var apns: APNsHeaders {
        get { common.apns }
        set { common = Common(matchId: common.matchId, apns: newValue, payload: common.payload) }
    }

    /// `apns.priority`, read through the shared part without copying the headers out.
    public var priority: Int { common.apns.priority }

    /// Shared by every delivery of the same update: built once, never per device.
    public var payload: PushPayload {
        get { common.payload }
        set { common = Common(matchId: common.matchId, apns: common.apns, payload: newValue) }
    }

    public init(id: String, matchId: String, activityId: String, target: PushTarget, apns: APNsHeaders, payload: PushPayload) {
        self.init(id: id, activityId: activityId, target: target,
                  common: Common(matchId: matchId, apns: apns, payload: payload))
    }

    /// A delivery sharing `common` with the others of its update (`DeliveryBuilder`).
    init(id: String, activityId: String, target: PushTarget, common: Common) {
        self.id = id
        self.activityId = activityId
        self.target = target
        self.common = common
    }

    /// A delivery of the same update as `other`: its match, headers and payload shared by reference, not copied.
    /// How a store reads back many deliveries of one stored payload.
    public init(id: String, activityId: String, target: PushTarget, sharingWith other: borrowing Delivery) {
        self.init(id: id, activityId: activityId, target: target, common: other.common)
    }

    /// The same for every delivery sharing its match, headers and payload by reference (as `DeliveryBuilder` makes
    /// the deliveries of one update): a store keeps the payload once per distinct value of this, not per delivery.
    /// Inlinable: a sink reading it from a batch reads one field in place, where a call would copy the delivery.
    @inlinable
    public var commonIdentity: ObjectIdentifier { ObjectIdentifier(common) }

    /// The kick-off template this delivery's start was cut from (`PushPayload.startTemplate`), read through the
    /// shared part without copying the payload out.
    public var startTemplate: StartPayloadTemplate? { common.payload.startTemplate }

    /// Whether this delivery shares its match, headers and payload with `other` by reference, not just equal (tests).
    func sharesCommonPart(with other: borrowing Delivery) -> Bool { common === other.common }

    /// The match, headers and payload of a delivery: immutable, compared and hashed by value.
    @usableFromInline
    final class Common: Sendable, Hashable {
        let matchId: String
        let apns: APNsHeaders
        let payload: PushPayload

        init(matchId: String, apns: APNsHeaders, payload: PushPayload) {
            self.matchId = matchId
            self.apns = apns
            self.payload = payload
        }

        @usableFromInline
        static func == (lhs: Common, rhs: Common) -> Bool {
            lhs === rhs || (lhs.matchId == rhs.matchId && lhs.apns == rhs.apns && lhs.payload == rhs.payload)
        }

        @usableFromInline
        func hash(into hasher: inout Hasher) {
            hasher.combine(matchId)
            hasher.combine(apns)
            hasher.combine(payload)
        }
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
        target.token.appendJSONString(to: &out)
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
    /// The common part `tail` was written from.
    private var tailCommon: Delivery.Common?
    private var tail: [UInt8] = []

    public init() {}

    /// Appends `delivery` as one JSON object (no newline).
    public mutating func append(_ delivery: borrowing Delivery, to out: inout [UInt8]) {
        delivery.appendJSONHead(to: &out)
        // Deliveries of one update share their common part: one pointer check. Others (read back from the store,
        // one common part each) compare headers and payload bytes, the payload's `==` a pointer check when shared.
        if tailCommon !== delivery.common {
            if tailCommon?.apns != delivery.apns || tailCommon?.payload.bytes != delivery.payload.bytes {
                tail.removeAll(keepingCapacity: true)
                delivery.appendJSONTail(to: &tail)
            }
            tailCommon = delivery.common
        }
        out.append(contentsOf: tail)
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
/// A string as JSON, escaped as Foundation's `JSONEncoder` escapes it: `"` and `\`, the control characters (those
/// with a short escape by it), everything else (`/` and non-ASCII included) as its UTF-8 bytes. The one escaper of the
/// deliveries' JSON and of `CanonicalJSONWriter`.
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
        case 0x08: out.append(contentsOf: [92, 98])
        case 0x0C: out.append(contentsOf: [92, 102])
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
