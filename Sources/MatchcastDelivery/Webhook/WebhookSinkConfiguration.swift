import Foundation

/// Where and how the webhook sink posts.
public struct WebhookSinkConfiguration: Sendable {
    /// The endpoint, an absolute http or https URL.
    public var url: String
    public var secret: WebhookSecret
    /// Deliveries per request at most.
    public var maxBatch: Int
    /// Requests in flight at once, per `deliver` call.
    public var maxConcurrentRequests: Int
    /// The whole exchange of one attempt, body included.
    public var requestTimeout: Duration
    public var retry: RetryPolicy
    /// How much of a refusing response's body is kept with its dead letters.
    public var maxErrorBodyBytes: Int

    public init(
        url: String,
        secret: WebhookSecret,
        maxBatch: Int = 500,
        maxConcurrentRequests: Int = 4,
        requestTimeout: Duration = .seconds(10),
        retry: RetryPolicy = RetryPolicy(),
        maxErrorBodyBytes: Int = 4096
    ) {
        self.url = url
        self.secret = secret
        self.maxBatch = maxBatch
        self.maxConcurrentRequests = maxConcurrentRequests
        self.requestTimeout = requestTimeout
        self.retry = retry
        self.maxErrorBodyBytes = maxErrorBodyBytes
    }

    /// Checks the values and returns `scheme://host[:port]` of the URL, the only part fit for logs
    /// (a path or query may carry a token).
    func validate() throws(WebhookError) -> String {
        guard let url = URL(string: url), let scheme = url.scheme?.lowercased() else {
            throw .invalidConfiguration("webhook URL is not a URL")
        }
        guard scheme == "http" || scheme == "https" else {
            throw .invalidConfiguration("webhook URL must use http or https, not '\(scheme.prefix(20))'")
        }
        guard let host = url.host, !host.isEmpty else {
            throw .invalidConfiguration("webhook URL has no host")
        }
        guard maxBatch > 0, maxConcurrentRequests > 0, maxErrorBodyBytes >= 0 else {
            throw .invalidConfiguration("maxBatch and maxConcurrentRequests must be positive")
        }
        guard requestTimeout > .zero, retry.maxAttempts > 0, retry.totalDeadline > .zero else {
            throw .invalidConfiguration("request timeout, attempts and total deadline must be positive")
        }
        guard retry.initialBackoff >= .zero, retry.maxBackoff >= retry.initialBackoff, (0...1).contains(retry.jitter) else {
            throw .invalidConfiguration("backoff must be 0 ≤ initial ≤ max and jitter in 0...1")
        }
        return "\(scheme)://\(host)" + (url.port.map { ":\($0)" } ?? "")
    }
}
