import Foundation

/// What one APNs answer means for its delivery. Pure classification, so the rules are tested
/// without I/O (Apple, "Handling notification responses from APNs"):
///
/// - 200: accepted.
/// - 410 (`Unregistered`, `ExpiredToken`), 400 `BadDeviceToken`, 400 `DeviceTokenNotForTopic`:
///   the token is dead; it is reported and never retried.
/// - 403 `ExpiredProviderToken`: a new provider token, then the same request again.
/// - 429: this token is throttled; retried after a backoff.
/// - 5xx: APNs is in trouble; retried after a backoff.
/// - any other status: the request itself is wrong; the delivery is dead-lettered.
enum APNsAnswer: Sendable, Hashable {
    case accepted
    case invalidToken
    case expiredProviderToken
    case throttled
    case serverError
    case rejected

    static func classify(status: Int, reason: String?) -> APNsAnswer {
        switch (status, reason) {
        case (200, _): .accepted
        case (410, _), (400, "BadDeviceToken"), (400, "DeviceTokenNotForTopic"): .invalidToken
        case (403, "ExpiredProviderToken"): .expiredProviderToken
        case (429, _): .throttled
        case (500..<600, _): .serverError
        default: .rejected
        }
    }

    /// The `reason` of an error body `{"reason": "...", "timestamp": ...}`; nil for an empty or other body.
    static func reason(fromBody body: [UInt8]) -> String? {
        struct ErrorBody: Decodable { var reason: String? }
        guard !body.isEmpty else { return nil }
        return (try? JSONDecoder().decode(ErrorBody.self, from: Data(body)))?.reason
    }

    /// The reasons Apple documents. Anything else is labelled `other`, so a strange body cannot grow
    /// the metric's label set.
    static let knownReasons: Set<String> = [
        "BadCollapseId", "BadDeviceToken", "BadExpirationDate", "BadMessageId", "BadPriority", "BadTopic",
        "DeviceTokenNotForTopic", "DuplicateHeaders", "IdleTimeout", "InvalidPushType", "MissingDeviceToken",
        "MissingTopic", "PayloadEmpty", "TopicDisallowed", "BadCertificate", "BadCertificateEnvironment",
        "ExpiredProviderToken", "Forbidden", "InvalidProviderToken", "MissingProviderToken",
        "BadPath", "MethodNotAllowed", "ExpiredToken",
        "Unregistered", "PayloadTooLarge", "TooManyProviderTokenUpdates", "TooManyRequests",
        "InternalServerError", "ServiceUnavailable", "Shutdown",
    ]

    /// The `reason` label of `matchcast_apns_responses_total`: `none` when the body had none.
    static func metricReason(_ reason: String?) -> String {
        guard let reason else { return "none" }
        return knownReasons.contains(reason) ? reason : "other"
    }

    /// The `kind` label of `matchcast_apns_request_errors_total` for an attempt that got no answer:
    /// `timeout` (no answer, or no connection, in time) or `connection_error`.
    static func errorKind(_ error: any Error) -> String {
        if let error = error as? APNsTransportError, error.isTimeout { return "timeout" }
        return "connection_error"
    }
}
