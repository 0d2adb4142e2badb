import Foundation

/// An encoded `{"aps": {...}}` body, at most 4096 bytes, built once and shared by every target of an update.
public struct PushPayload: Sendable, Hashable {
    /// APNs' limit for a Live Activity push body.
    public static let maxBytes = 4096

    public let aps: APS
    /// The exact bytes sent to APNs and embedded in every Delivery.
    public let bytes: [UInt8]
    /// True when the shortening rule had to cut the content to fit.
    public let wasShortened: Bool
    /// The kick-off template this start was cut from (its bytes are the template's with `aps`'s activity id put
    /// in); nil for every other payload. Not part of the value: two payloads with the same bytes are equal.
    public let startTemplate: StartPayloadTemplate?

    private struct Body: Encodable { let aps: APS }

    /// Encodes `aps`, shortening it by the documented rule when it exceeds 4096 bytes:
    /// 1. drop `batters`; 2. cut `event` and the alert body to 80 characters;
    /// 3. cut every content-state string to 24 characters; 4. cut attribute names to 24 characters
    /// (characters here are Unicode scalars, so combining marks cannot inflate a cut string).
    /// Each cut ends in "…". Throws only when even that does not fit (it cannot with the
    /// shapes Matchcast builds; the error is counted, never silent).
    public init(_ aps: APS) throws(PayloadTooLarge) {
        var candidate = aps
        var shortened = false
        for step in 0...4 {
            if step > 0 {
                Self.shorten(&candidate, step: step)
                shortened = true
            }
            let bytes = Self.encode(candidate)
            if bytes.count <= Self.maxBytes {
                self.aps = candidate
                self.bytes = bytes
                self.wasShortened = shortened
                startTemplate = nil
                return
            }
        }
        throw PayloadTooLarge(bytes: Self.encode(candidate).count)
    }

    /// Bytes already encoded for `aps` (`StartPayloadTemplate`, a decoded payload).
    init(aps: APS, bytes: [UInt8], wasShortened: Bool, startTemplate: StartPayloadTemplate? = nil) {
        self.aps = aps
        self.bytes = bytes
        self.wasShortened = wasShortened
        self.startTemplate = startTemplate
    }

    public static func == (lhs: PushPayload, rhs: PushPayload) -> Bool {
        lhs.bytes == rhs.bytes && lhs.wasShortened == rhs.wasShortened && lhs.aps == rhs.aps
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(bytes)
    }

    static func encode(_ aps: APS) -> [UInt8] {
        // Encoding plain value types with string keys cannot fail.
        Array(try! JSON.encoder().encode(Body(aps: aps)))
    }

    private static func shorten(_ aps: inout APS, step: Int) {
        switch step {
        case 1:
            aps.contentState.batters = nil
        case 2:
            aps.contentState.event = aps.contentState.event.map { cut($0, 80) }
            if var alert = aps.alert {
                alert.body = cut(alert.body, 80)
                aps.alert = alert
            }
        case 3:
            var s = aps.contentState
            s.statusText = cut(s.statusText, 24)
            s.home = .init(name: cut(s.home.name, 24), score: cut(s.home.score, 24))
            s.away = .init(name: cut(s.away.name, 24), score: cut(s.away.score, 24))
            s.summary = cut(s.summary, 24)
            s.event = s.event.map { cut($0, 24) }
            s.result = s.result.map { cut($0, 24) }
            for path in [\ContentState.batting, \.runRate, \.equation, \.requiredRate, \.bowler, \.sets, \.game,
                         \.period, \.clock, \.inning, \.outs, \.bases] {
                s[keyPath: path] = s[keyPath: path].map { cut($0, 24) }
            }
            aps.contentState = s
            if var alert = aps.alert {
                alert.title = cut(alert.title, 24)
                aps.alert = alert
            }
        default:
            if var a = aps.attributes {
                a.homeName = cut(a.homeName, 24)
                a.awayName = cut(a.awayName, 24)
                a.homeShort = cut(a.homeShort, 24)
                a.awayShort = cut(a.awayShort, 24)
                a.competition = a.competition.map { cut($0, 24) }
                aps.attributes = a
            }
        }
    }

    /// Cuts to `limit` Unicode scalars (so at most 4 × limit bytes, whatever combining marks a
    /// feed sends), ending in "…".
    static func cut(_ text: String, _ limit: Int) -> String {
        guard text.unicodeScalars.count > limit else { return text }
        var scalars = String.UnicodeScalarView()
        scalars.append(contentsOf: text.unicodeScalars.prefix(limit - 1))
        return String(scalars) + "…"
    }
}

/// A payload that does not fit APNs' 4096 bytes even after shortening.
public struct PayloadTooLarge: Error, Sendable, Hashable, CustomStringConvertible {
    public let bytes: Int
    public var description: String { "push payload is \(bytes) bytes after shortening, over 4096" }
}
