import Foundation

/// What one FCM HTTP v1 answer means for its message. Pure classification, so the rules are tested without I/O
/// (Firebase, "FCM error codes" and "Best practices for FCM registration token management"):
///
/// - 200: accepted.
/// - 404 `UNREGISTERED`, or 400 `INVALID_ARGUMENT` about the registration token: the token is dead; nothing more is
///   sent to it.
/// - 401 other than `THIRD_PARTY_AUTH_ERROR`: the access token was refused; a new one, then the same message again.
/// - 429 (`QUOTA_EXCEEDED`): throttled; retried after a backoff, never sooner than a `Retry-After`.
/// - 5xx (`INTERNAL`, `UNAVAILABLE`): FCM is in trouble; retried after a backoff.
/// - anything else (403 `SENDER_ID_MISMATCH` or `PERMISSION_DENIED`, a 400 about the payload, 401
///   `THIRD_PARTY_AUTH_ERROR`): the message itself cannot go; it is dead-lettered with FCM's reason.
enum FCMAnswer: Sendable, Hashable {
    case accepted
    case invalidToken
    case unauthenticated
    case throttled
    case serverError
    case rejected

    /// The parts of an error body `{"error": {"code", "message", "status", "details": [...]}}` that decide.
    struct ErrorBody: Sendable, Hashable {
        /// The google.rpc status (`INVALID_ARGUMENT`, `UNAUTHENTICATED`, `NOT_FOUND`, …).
        var status: String?
        /// The `errorCode` of a `google.firebase.fcm.v1.FcmError` detail (`UNREGISTERED`, `SENDER_ID_MISMATCH`, …).
        var errorCode: String?
        var message: String?
        /// The `field` of each `google.rpc.BadRequest` field violation (`message.token`, `message.data[0].value`).
        var fieldViolations: [String] = []

        /// FCM's error code, else the status: what `TokenAnswers` and dead letters keep as the reason.
        var reason: String? { errorCode ?? status }
    }

    static func classify(status: Int, error: ErrorBody?) -> FCMAnswer {
        switch status {
        case 200..<300: return .accepted
        case 404 where error?.errorCode == "UNREGISTERED": return .invalidToken
        case 400 where isAboutToken(error): return .invalidToken
        case 401 where error?.errorCode == "THIRD_PARTY_AUTH_ERROR": return .rejected
        case 401: return .unauthenticated
        case 429: return .throttled
        case 500..<600: return .serverError
        default: return .rejected
        }
    }

    /// A 400 blames the registration token when a field violation names `message.token`, or when it is an FcmError
    /// `INVALID_ARGUMENT` that names no other field and whose message (if any) speaks of the token. A 400 about the
    /// data, the TTL or the JSON names its field instead (`google.rpc.BadRequest`) and kills no token.
    static func isAboutToken(_ error: ErrorBody?) -> Bool {
        guard let error else { return false }
        if error.fieldViolations.contains("message.token") { return true }
        guard error.fieldViolations.isEmpty, error.errorCode == "INVALID_ARGUMENT" else { return false }
        guard let message = error.message?.lowercased() else { return true }
        return message.contains("token")
    }

    /// Reads an FCM error body; nil for an empty body or one that is not FCM's error JSON.
    static func errorBody(_ body: [UInt8]) -> ErrorBody? {
        guard !body.isEmpty, let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any],
              let error = object["error"] as? [String: Any]
        else { return nil }
        var parsed = ErrorBody(status: error["status"] as? String, message: error["message"] as? String)
        for detail in error["details"] as? [[String: Any]] ?? [] {
            let type = detail["@type"] as? String ?? ""
            if type.hasSuffix("google.firebase.fcm.v1.FcmError"), let code = detail["errorCode"] as? String {
                parsed.errorCode = code
            }
            if type.hasSuffix("google.rpc.BadRequest") {
                for violation in detail["fieldViolations"] as? [[String: Any]] ?? [] {
                    if let field = violation["field"] as? String { parsed.fieldViolations.append(field) }
                }
            }
        }
        return parsed
    }

    /// The codes FCM and Google APIs document. Anything else is labelled `other`, so a strange body cannot grow the
    /// metric's label set.
    static let knownReasons: Set<String> = [
        "UNSPECIFIED_ERROR", "INVALID_ARGUMENT", "UNREGISTERED", "SENDER_ID_MISMATCH", "QUOTA_EXCEEDED", "UNAVAILABLE",
        "INTERNAL", "THIRD_PARTY_AUTH_ERROR", "UNAUTHENTICATED", "PERMISSION_DENIED", "NOT_FOUND", "RESOURCE_EXHAUSTED",
    ]

    /// The `reason` label of `matchcast_fcm_responses_total`: `none` when the body had none.
    static func metricReason(_ reason: String?) -> String {
        guard let reason else { return "none" }
        return knownReasons.contains(reason) ? reason : "other"
    }
}
