import AsyncHTTPClient

/// What one POST came to. Pure classification, so the rules of docs/formats.md, "Webhook" are tested without I/O:
/// 2xx acknowledges the whole batch; 429, 5xx, timeouts and connection errors are retried; any
/// other status (3xx, 4xx) is final and turns the batch into dead letters.
enum WebhookAttempt {
    /// The `outcome` label of `matchcast_webhook_requests_total`.
    enum Outcome: String, Sendable, CaseIterable {
        case delivered
        case throttled
        case serverError = "server_error"
        case rejected
        case timeout
        case connectionError = "connection_error"

        var isRetryable: Bool { self != .delivered && self != .rejected }
    }

    static func outcome(status: Int) -> Outcome {
        switch status {
        case 200..<300: .delivered
        case 429: .throttled
        case 500..<600: .serverError
        default: .rejected
        }
    }

    /// A failure with no status: the endpoint did not answer in time, or could not be reached.
    static func outcome(error: any Error) -> Outcome {
        if error is RequestTimedOut { return .timeout }
        if let error = error as? HTTPClientError {
            switch error {
            case .deadlineExceeded, .readTimeout, .connectTimeout, .getConnectionFromPoolTimeout,
                 .tlsHandshakeTimeout, .writeTimeout:
                return .timeout
            default:
                return .connectionError
            }
        }
        return .connectionError
    }

    /// The sink's own per-request timer fired first.
    struct RequestTimedOut: Error {}
}
