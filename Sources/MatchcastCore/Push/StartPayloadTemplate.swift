/// The encoded payload of a push-to-start `start` with a stand-in for the activity id: every start of one kick-off
/// differs from the others only in `attributes.activityId`, so the payload is encoded once and each start's bytes
/// are the template's with the real id put in place of the stand-in — the same bytes `PushPayload(aps)` writes.
///
/// Shared by reference by every start cut from it (`PushPayload.startTemplate`), so a store can keep a kick-off's
/// starts as one payload (`encoded`, the stand-in at `activityIdOffset`) and their activity ids, and cut them again
/// on reading (`init(encoded:activityIdOffset:)`, `payload(activityId:)`).
public final class StartPayloadTemplate: Sendable {
    /// Letters and digits only, so it is written as is, and long enough never to occur in a feed's text by chance.
    static let standIn = "mcStartActivityIdStandIn7f3a9c51e2"

    /// The start with `standIn` for its activity id, as decoded from `encoded`.
    private let key: APS
    private let before: [UInt8]
    private let after: [UInt8]

    /// The payload with the stand-in in place of the activity id.
    public var encoded: [UInt8] { before + Array(Self.standIn.utf8) + after }
    /// Where the stand-in starts in `encoded`.
    public var activityIdOffset: Int { before.count }

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
    convenience init?(_ key: APS) throws(PayloadTooLarge) {
        let encoded = try PushPayload(key)
        guard !encoded.wasShortened, let at = Self.standInOffset(in: encoded.bytes) else { return nil }
        self.init(key: key, bytes: encoded.bytes, at: at)
    }

    /// A template as a store kept it: `encoded` must be a start's payload holding the stand-in once, at
    /// `activityIdOffset`.
    public convenience init(encoded: [UInt8], activityIdOffset: Int) throws(InputError) {
        guard Self.standInOffset(in: encoded) == activityIdOffset else {
            throw InputError(
                field: "payload", reason: "a start template without its one activity id stand-in at byte \(activityIdOffset)")
        }
        let key = try PushPayload(encoded: encoded).aps
        guard key.attributes?.activityId == Self.standIn else {
            throw InputError(field: "payload", reason: "a start template whose attributes.activityId is not the stand-in")
        }
        self.init(key: key, bytes: encoded, at: activityIdOffset)
    }

    private init(key: APS, bytes: [UInt8], at offset: Int) {
        self.key = key
        before = Array(bytes[..<offset])
        after = Array(bytes[(offset + Self.standIn.utf8.count)...])
    }

    /// Where the stand-in is in `bytes`; nil unless it is there exactly once.
    private static func standInOffset(in bytes: [UInt8]) -> Int? {
        let needle = Array(standIn.utf8)
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
        return found
    }

    /// The payload of `aps` (this template's start with its own activity id), or nil when the id needs escaping in
    /// JSON or the payload would outgrow APNs' limit: those are encoded in full.
    func payload(for aps: APS, activityId: String) -> PushPayload? {
        guard let bytes = bytes(activityId: activityId) else { return nil }
        return PushPayload(aps: aps, bytes: bytes, wasShortened: false, startTemplate: self)
    }

    /// This template's start for `activityId` (as `payload(for:activityId:)` cut it), or nil when the id cannot be
    /// put in as is.
    public func payload(activityId: String) -> PushPayload? {
        guard let bytes = bytes(activityId: activityId) else { return nil }
        var aps = key
        aps.attributes?.activityId = activityId
        return PushPayload(aps: aps, bytes: bytes, wasShortened: false, startTemplate: self)
    }

    private func bytes(activityId: String) -> [UInt8]? {
        let id = activityId.utf8
        guard id.allSatisfy(Self.writtenAsIs), before.count + id.count + after.count <= PushPayload.maxBytes else {
            return nil
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(before.count + id.count + after.count)
        bytes.append(contentsOf: before)
        bytes.append(contentsOf: id)
        bytes.append(contentsOf: after)
        return bytes
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
