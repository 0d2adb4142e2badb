/// The encoded payload of a push-to-start `start` with a stand-in for the activity id: every start of one kick-off
/// differs from the others only in `attributes.activityId`, so the payload is encoded once and each start's bytes
/// are the template's with the real id put in place of the stand-in — the same bytes `PushPayload(aps)` writes.
struct StartPayloadTemplate {
    /// Letters and digits only, so it is written as is, and long enough never to occur in a feed's text by chance.
    static let standIn = "mcStartActivityIdStandIn7f3a9c51e2"

    private let before: [UInt8]
    private let after: [UInt8]

    /// The start `aps` with its activity id replaced by `standIn` (nil when it is not a start).
    static func key(for aps: APS) -> APS? {
        guard var attributes = aps.attributes else { return nil }
        var key = aps
        attributes.activityId = standIn
        key.attributes = attributes
        return key
    }

    /// Nil when the template cannot be cut cleanly: the stand-in not found exactly once, or the payload shortened
    /// to fit (a longer or shorter id could change how it is shortened).
    init?(_ key: APS) throws(PayloadTooLarge) {
        let encoded = try PushPayload(key)
        guard !encoded.wasShortened else { return nil }
        let needle = Array(Self.standIn.utf8)
        let bytes = encoded.bytes
        var found: Int?
        var position = 0
        while position + needle.count <= bytes.count {
            if bytes[position] == needle[0], bytes[position..<position + needle.count].elementsEqual(needle) {
                guard found == nil else { return nil }
                found = position
                position += needle.count
            } else {
                position += 1
            }
        }
        guard let found else { return nil }
        before = Array(bytes[..<found])
        after = Array(bytes[(found + needle.count)...])
    }

    /// The payload of `aps` (this template's start with its own activity id), or nil when the id needs escaping in
    /// JSON or the payload would outgrow APNs' limit: those are encoded in full.
    func payload(for aps: APS, activityId: String) -> PushPayload? {
        let id = activityId.utf8
        guard id.allSatisfy(Self.writtenAsIs), before.count + id.count + after.count <= PushPayload.maxBytes else {
            return nil
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(before.count + id.count + after.count)
        bytes.append(contentsOf: before)
        bytes.append(contentsOf: id)
        bytes.append(contentsOf: after)
        return PushPayload(aps: aps, bytes: bytes, wasShortened: false)
    }

    /// ASCII letters, digits, `_`, `-`, `.` and `:`: what every JSON encoder writes inside a string unchanged.
    private static func writtenAsIs(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
             UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: ":"):
            return true
        default:
            return false
        }
    }
}
