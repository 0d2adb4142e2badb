import Foundation

/// A live surface as a Web Push payload (docs/formats.md, "Live surface"): the JSON body a service worker
/// receives in its `push` event and passes to `showNotification`, and the values of the `TTL` and `Urgency`
/// headers a sink sends with it. MatchcastDelivery's `WebPushMessage` encrypts the body for one subscription and
/// sets the headers, the `Topic` among them (`WebPushMessage.topic(forMatch:)`).
public struct WebPushPayload: Sendable, Hashable {
    /// The most plaintext a push fits: push services commonly accept 4096 bytes of encrypted payload, and
    /// RFC 8291's aes128gcm adds an 86-byte header (salt, record size, key id length, the sender's 65-byte
    /// key), a 16-byte authentication tag and a 1-byte padding delimiter.
    public static let maxPlaintextBytes = 4096 - 86 - 16 - 1

    /// The `Urgency` header (RFC 8030 §5.3).
    public enum Urgency: String, Sendable, Hashable {
        case normal
        case high
    }

    /// The UTF-8 JSON body, keys sorted, before encryption.
    public let body: [UInt8]
    /// The `TTL` header in seconds (`LiveSurface.ttl(now:)`).
    public let ttl: Int
    /// `high` for a start, an end or a key moment (`LiveSurface.isUrgent`), else `normal`.
    public let urgency: Urgency
    /// True when the shortening rule had to cut the surface to fit.
    public let wasShortened: Bool

    init(body: [UInt8], ttl: Int, urgency: Urgency, wasShortened: Bool) {
        self.body = body
        self.ttl = ttl
        self.urgency = urgency
        self.wasShortened = wasShortened
    }
}

extension LiveSurface {
    /// This surface as a Web Push message, shortened by the documented rule to fit
    /// `WebPushPayload.maxPlaintextBytes`.
    ///
    /// - Parameter now: when it is sent, for the TTL.
    /// - Throws: `SurfaceTooLarge` only when even the shortest form does not fit.
    public func webPushPayload(now: Date) throws(SurfaceTooLarge) -> WebPushPayload {
        let fitted = try fitting(.webPush, limit: WebPushPayload.maxPlaintextBytes) { surface in
            let body = surface.webPushBody()
            return (body, body.count)
        }
        return WebPushPayload(
            body: fitted.rendering, ttl: ttl(now: now), urgency: isUrgent ? .high : .normal,
            wasShortened: fitted.shortened)
    }

    /// The JSON body as it is, without shortening:
    /// `{"body", "data", "renotify", "requireInteraction", "silent", "tag", "timestamp", "title"}`.
    ///
    /// - `title`: the match; `body`: the score line, then on a second line the result once final, else the
    ///   key event when this push is a key moment;
    /// - `tag`: `LiveSurface.tag`, so each push replaces the match's notification instead of stacking;
    /// - `timestamp`: the update's time in milliseconds, as the Notification API counts;
    /// - `renotify`: true for a start or a key moment, so the replacing notification sounds and vibrates
    ///   again; a routine update replaces it quietly (`silent` is then true too);
    /// - `requireInteraction`: true while the match is on (`start`, `update`): on desktops the score stays up
    ///   until the user closes it, as an ongoing notification does on a phone; false on `end`, so the final
    ///   result goes away as any notification does;
    /// - `data`: everything a service worker needs to act on the push, including what `showNotification`
    ///   does not take (the match id, the event, the progress bar, the deep link, the dates).
    public func webPushBody() -> [UInt8] {
        let alerts = event == .start || isKeyMoment
        let second = (isFinal ? result : nil) ?? (isKeyMoment ? keyEvent : nil)
        let lines = [scoreLine] + [second].compactMap { $0 }.filter { !$0.isEmpty && $0 != scoreLine }
        let body = WebPushBody(
            title: title, body: lines.joined(separator: "\n"), tag: tag,
            timestamp: timestamp.multipliedReportingOverflow(by: 1000).overflow ? 0 : timestamp * 1000,
            renotify: alerts, silent: !alerts, requireInteraction: !ended,
            data: .init(
                v: FCMDataMessage.formatVersion, match: matchId, event: event, sport: sport, subtitle: subtitle,
                score: scoreLine, status: status, statusText: statusText, keyEvent: keyEvent, result: result,
                alert: isKeyMoment, final: isFinal, progress: progress, link: deepLink, ts: timestamp,
                stale: staleDate, dismiss: dismissalDate))
        // Encoding plain value types with string keys cannot fail.
        return Array(try! JSON.encoder().encode(body))
    }
}

/// The Web Push JSON body; optional fields are left out when nil.
private struct WebPushBody: Encodable {
    struct Data: Encodable {
        var v: Int
        var match: String
        var event: ActivityEvent
        var sport: Sport?
        var subtitle: String?
        var score: String
        var status: String
        var statusText: String
        var keyEvent: String?
        var result: String?
        var alert: Bool
        var final: Bool
        var progress: LiveSurface.Progress?
        var link: String?
        var ts: Int
        var stale: Int?
        var dismiss: Int?
    }

    var title: String
    var body: String
    var tag: String
    var timestamp: Int
    var renotify: Bool
    var silent: Bool
    var requireInteraction: Bool
    var data: Data
}
