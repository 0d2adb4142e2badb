import Foundation
import MatchcastDelivery

/// Checks on what callers send, each failure an `invalid_request` naming the field.
enum Validation {
    /// APNs tokens are hex; 32 bytes today, up to 100 allowed for future lengths.
    static func token(_ value: String, field: String) throws(ServiceError) -> String {
        let token = value.lowercased()
        guard (32...200).contains(token.utf8.count), token.utf8.count % 2 == 0,
              token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw ServiceError(.invalidRequest, "field '\(field)': must be an even number of hex digits, 32 to 200 long")
        }
        return token
    }

    /// FCM registration tokens: what FCM issues (`FCMSinkConfiguration.isRegistrationToken`), kept as given.
    static func fcmToken(_ value: String, field: String) throws(ServiceError) -> String {
        guard FCMSinkConfiguration.isRegistrationToken(value) else {
            throw ServiceError(.invalidRequest, "field '\(field)': must be 1 to 4096 ASCII letters, digits, '-', '_', ':' or '.', as FCM issues registration tokens")
        }
        return value
    }

    /// A browser's `PushSubscription.toJSON()`: checked as the Web Push sink checks a subscription file (an https
    /// endpoint, a P-256 `p256dh`, a 16-byte `auth`, an expiry not passed), and returned in its one canonical text.
    static func webPushSubscription(_ json: some DataProtocol) throws(ServiceError) -> String {
        guard json.count <= WebPushMessage.Subscription.maximumFileBytes else {
            throw ServiceError(.invalidRequest, "the subscription is over \(WebPushMessage.Subscription.maximumFileBytes) bytes; a browser's is a few hundred")
        }
        do {
            return try WebPushMessage.Subscription(json: json, source: "the subscription").canonicalJSON
        } catch {
            throw ServiceError(.invalidRequest, error.message)
        }
    }

    /// Ids of matches and activities: 1 to 128 bytes of letters, digits and `._:-`.
    static func identifier(_ value: String, field: String) throws(ServiceError) {
        guard isIdentifier(value) else {
            throw ServiceError(.invalidRequest, "field '\(field)': must be 1 to 128 letters, digits or . _ : -")
        }
    }

    static func isIdentifier(_ value: String) -> Bool {
        (1...128).contains(value.utf8.count) && value.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || byte == 46 || byte == 95 || byte == 58 || byte == 45
        }
    }
}
