import Foundation
import MatchcastCore

/// The body of one FCM HTTP v1 send (`POST /v1/projects/{project_id}/messages:send`): a data message to one
/// registration token, with its Android delivery options.
///
/// ```json
/// {"message": {"token": "…", "data": {"mc_v": "1", …},
///              "android": {"collapse_key": "mc-ipl-2026-m41", "priority": "HIGH", "ttl": "300s"}}}
/// ```
/// Keys are sorted, so one message is always the same bytes.
enum FCMSendRequest {
    private struct Envelope: Encodable {
        var message: Message
    }

    private struct Message: Encodable {
        var token: String
        var data: [String: String]
        var android: Android
    }

    private struct Android: Encodable {
        /// Always `HIGH`. Every message re-posts the match's ongoing notification, the user-visible, time-sensitive
        /// content FCM's high priority is for; a `NORMAL` one waits while the device dozes, until its next
        /// maintenance window, and the Live Update would show a stale score meanwhile. (Routine updates still go at
        /// most once per `coalesceSeconds`, as for iPhones.)
        var priority = "HIGH"
        /// A protobuf Duration in JSON: whole seconds and `s`.
        var ttl: String
        var collapse_key: String
    }

    /// The JSON body sending `message` to `token`.
    static func body(token: String, message: FCMDataMessage) -> [UInt8] {
        let envelope = Envelope(message: Message(
            token: token, data: message.data,
            android: Android(ttl: "\(max(0, message.ttl))s", collapse_key: message.collapseKey)))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Strings and a dictionary of strings: encoding cannot fail.
        return Array(try! encoder.encode(envelope))
    }

    /// The send URL for `projectId` at `endpoint` (no trailing slash).
    static func url(endpoint: String, projectId: String) -> String {
        endpoint + "/v1/projects/" + projectId + "/messages:send"
    }
}
