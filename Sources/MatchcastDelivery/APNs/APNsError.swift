import MatchcastCore

/// The APNs sink could not be set up, or could not hand some deliveries to APNs.
///
/// `reason` is a short fixed string for metrics and alerts. No description ever contains key
/// material, a provider token or a whole device token. After `retries_exhausted`, `undelivered`
/// holds the deliveries APNs neither accepted nor refused for good, for the caller to keep.
public struct APNsError: PartialDeliveryFailure, Sendable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case invalidConfiguration(String)
        case invalidKey(String)
        case retriesExhausted(tokens: Int, last: String)
    }

    let code: Code
    /// Deliveries APNs did not take; empty for configuration and key errors.
    public let undelivered: [Delivery]

    static func invalidConfiguration(_ message: String) -> APNsError {
        APNsError(code: .invalidConfiguration(message), undelivered: [])
    }

    static func invalidKey(_ message: String) -> APNsError {
        APNsError(code: .invalidKey(message), undelivered: [])
    }

    static func retriesExhausted(tokens: Int, last: String, undelivered: [Delivery]) -> APNsError {
        APNsError(code: .retriesExhausted(tokens: tokens, last: last), undelivered: undelivered)
    }

    /// `config`, `key` or `retries_exhausted`.
    public var reason: String {
        switch code {
        case .invalidConfiguration: "config"
        case .invalidKey: "key"
        case .retriesExhausted: "retries_exhausted"
        }
    }

    public var description: String {
        switch code {
        case .invalidConfiguration(let message):
            "APNs configuration: \(message)"
        case .invalidKey(let message):
            "APNs signing key: \(message)"
        case .retriesExhausted(let tokens, let last):
            "APNs gave up on \(undelivered.count) deliveries to \(tokens) tokens (last: \(last))"
        }
    }
}
