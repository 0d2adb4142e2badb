import Foundation

/// A live surface as an FCM data message (docs/formats.md, "Live surface"): the `data` map an Android app's
/// `onMessageReceived` reads, and the message-level fields a sink sets around it.
///
/// A data message, not a notification message, so the app builds the notification itself (a promoted
/// ongoing Live Update with a progress bar), in the foreground and the background alike.
public struct FCMDataMessage: Sendable, Hashable {
    /// FCM's limit for a data payload: keys and values, UTF-8.
    public static let maxBytes = 4096
    /// `mc_v`: bumped when a key changes meaning or goes away; new keys do not bump it.
    public static let formatVersion = 1

    /// The `data` map: string keys to string values, every key prefixed `mc_`.
    public let data: [String: String]
    /// `android.collapse_key`: the match's `LiveSurface.tag`, so FCM keeps only the newest pending message.
    public let collapseKey: String
    /// `android.ttl` in seconds (`LiveSurface.ttl(now:)`).
    public let ttl: Int
    /// True when the shortening rule had to cut the surface to fit.
    public let wasShortened: Bool

    /// Size of `data` as FCM counts it: the UTF-8 bytes of every key and value.
    public var byteCount: Int { Self.byteCount(of: data) }

    public static func byteCount(of data: [String: String]) -> Int {
        data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
    }

    init(data: [String: String], collapseKey: String, ttl: Int, wasShortened: Bool) {
        self.data = data
        self.collapseKey = collapseKey
        self.ttl = ttl
        self.wasShortened = wasShortened
    }
}

extension LiveSurface {
    /// This surface as an FCM data message, shortened by the documented rule to fit 4096 bytes.
    ///
    /// - Parameter now: when it is sent, for the TTL.
    /// - Throws: `SurfaceTooLarge` only when even the shortest form does not fit (a match id of thousands
    ///   of bytes).
    public func fcmMessage(now: Date) throws(SurfaceTooLarge) -> FCMDataMessage {
        let fitted = try fitting(.fcm, limit: FCMDataMessage.maxBytes) { surface in
            let data = surface.fcmData()
            return (data, FCMDataMessage.byteCount(of: data))
        }
        return FCMDataMessage(
            data: fitted.rendering, collapseKey: tag, ttl: ttl(now: now),
            wasShortened: fitted.shortened)
    }

    /// The `data` map as it is, without shortening. Absent optional fields leave their key out; flags are
    /// "1" or "0"; numbers are decimal; lists are comma-separated decimals.
    public func fcmData() -> [String: String] {
        var data: [String: String] = [
            "mc_v": String(FCMDataMessage.formatVersion),
            "mc_event": event.rawValue,
            "mc_match": matchId,
            "mc_title": title,
            "mc_score": scoreLine,
            "mc_status": status,
            "mc_status_text": statusText,
            "mc_alert": isKeyMoment ? "1" : "0",
            "mc_final": isFinal ? "1" : "0",
            "mc_ts": String(timestamp),
        ]
        data["mc_sport"] = sport?.rawValue
        data["mc_sub"] = subtitle
        data["mc_event_text"] = keyEvent
        data["mc_result"] = result
        data["mc_link"] = deepLink
        data["mc_stale"] = staleDate.map(String.init)
        data["mc_dismiss"] = dismissalDate.map(String.init)
        if let progress {
            data["mc_unit"] = progress.unit.rawValue
            data["mc_progress"] = String(progress.position)
            data["mc_segments"] = progress.segments.map(String.init).joined(separator: ",")
            if !progress.points.isEmpty {
                data["mc_points"] = progress.points.map(String.init).joined(separator: ",")
            }
        }
        return data
    }
}
