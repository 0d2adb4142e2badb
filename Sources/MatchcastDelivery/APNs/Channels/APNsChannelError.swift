/// A channel management request failed. `reason` is a short fixed label for metrics and logs:
/// `rejected` (APNs answered with an error), `timeout`, `connection`, `bad_answer` (an answer APNs
/// should not give, such as a 201 without `apns-channel-id`), `signing` or `config`. The
/// description says what failed and, for the reasons Apple documents, what usually causes it; it
/// never holds a provider token or key.
public struct APNsChannelError: Error, Sendable, Hashable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case rejected(status: Int, reason: String?)
        case transport(timeout: Bool, message: String)
        case badAnswer(String)
        case signing(String)
        case config(String)
    }

    let code: Code
    /// What was being done: `create`, `delete`, `list`.
    public let operation: String

    /// The HTTP status of a `rejected` answer.
    public var status: Int? {
        if case .rejected(let status, _) = code { return status }
        return nil
    }

    /// APNs' `reason` of a `rejected` answer.
    public var apnsReason: String? {
        if case .rejected(_, let reason) = code { return reason }
        return nil
    }

    public var reason: String {
        switch code {
        case .rejected: "rejected"
        case .transport(let timeout, _): timeout ? "timeout" : "connection"
        case .badAnswer: "bad_answer"
        case .signing: "signing"
        case .config: "config"
        }
    }

    /// Whether trying again later may succeed (throttling, APNs in trouble, no answer).
    public var isTransient: Bool {
        switch code {
        case .rejected(let status, let reason): status == 429 || status >= 500 || reason == "ExpiredProviderToken"
        case .transport: true
        case .badAnswer, .signing, .config: false
        }
    }

    public var description: String {
        switch code {
        case .rejected(let status, let reason):
            let hint = reason.flatMap { Self.hints[$0] }.map { " (\($0))" } ?? ""
            return "APNs channel \(operation) refused: HTTP \(status) \(reason ?? "")\(hint)"
        case .transport(let timeout, let message):
            return "APNs channel \(operation) got no answer\(timeout ? " in time" : ""): \(message)"
        case .badAnswer(let message):
            return "APNs channel \(operation): unexpected answer: \(message)"
        case .signing(let message):
            return "APNs channel \(operation): provider token signing failed: \(message)"
        case .config(let message):
            return "APNs channel client configuration: \(message)"
        }
    }

    static func config(_ message: String) -> APNsChannelError {
        APNsChannelError(code: .config(message), operation: "setup")
    }

    /// What usually lies behind the reasons Apple's channel management documentation lists.
    static let hints: [String: String] = [
        "BadChannelId": "the channel id is malformed or not this app's",
        "ChannelNotRegistered": "no such channel: it was deleted, or belongs to the other environment",
        "InvalidProviderToken": "the key id, team id or key is wrong",
        "ExpiredProviderToken": "the provider token is over an hour old",
        "MissingProviderToken": "no authorization header",
        "Forbidden": "the app id lacks the Broadcast capability (Certificates, Identifiers & Profiles)",
        "BadMessageStoragePolicy": "message-storage-policy must be 0 or 1",
        "BadPushType": "push-type must be LiveActivity",
        "CannotCreateChannelConfig": "too many channels: delete unused ones (10,000 per app and environment)",
        "TooManyRequests": "too many management requests; slow down",
        "InternalServerError": "APNs is in trouble; try again",
        "ServiceUnavailable": "APNs is in trouble; try again",
    ]
}
