import MatchcastCore

/// The webhook sink could not be set up, or could not hand some deliveries over.
///
/// `reason` is a short fixed string for metrics and alerts. After `retries_exhausted`, `undelivered`
/// holds the deliveries that were neither acknowledged nor dead-lettered, for the caller to keep.
public struct WebhookError: PartialDeliveryFailure, Sendable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case invalidConfiguration(String)
        case retriesExhausted(batches: Int, attempts: Int, last: String)
    }

    let code: Code
    /// Deliveries the endpoint did not take; empty for configuration errors.
    public let undelivered: [Delivery]

    static func invalidConfiguration(_ message: String) -> WebhookError {
        WebhookError(code: .invalidConfiguration(message), undelivered: [])
    }

    static func retriesExhausted(batches: Int, attempts: Int, last: String, undelivered: [Delivery]) -> WebhookError {
        WebhookError(code: .retriesExhausted(batches: batches, attempts: attempts, last: last), undelivered: undelivered)
    }

    /// `config` or `retries_exhausted`.
    public var reason: String {
        switch code {
        case .invalidConfiguration: "config"
        case .retriesExhausted: "retries_exhausted"
        }
    }

    public var description: String {
        switch code {
        case .invalidConfiguration(let message):
            "webhook configuration: \(message)"
        case .retriesExhausted(let batches, let attempts, let last):
            "webhook gave up on \(undelivered.count) deliveries in \(batches) batches (\(attempts) attempts; last: \(last))"
        }
    }
}
