import CoreMetrics

/// The FCM sink's counters, made through an injected factory.
struct FCMMetrics: Sendable {
    let factory: any MetricsFactory

    /// `matchcast_fcm_responses_total{status, reason}`: one per answer FCM gave to a send; `reason` is the FCM error
    /// code (`UNREGISTERED`, `QUOTA_EXCEEDED`, …), `none` for an answer without one.
    func response(status: Int, reason: String?) {
        Counter(
            label: "matchcast_fcm_responses_total",
            dimensions: [("status", String(status)), ("reason", FCMAnswer.metricReason(reason))], factory: factory
        ).increment()
    }

    /// `matchcast_fcm_request_errors_total{kind}`: a send that got no answer (`timeout`, `connection_error`).
    func requestError(kind: String) {
        Counter(label: "matchcast_fcm_request_errors_total", dimensions: [("kind", kind)], factory: factory).increment()
    }

    /// `matchcast_fcm_access_tokens_total{outcome}`: token exchanges, `granted`, `refused` (for good) or `failed`
    /// (retried).
    func accessToken(outcome: String) {
        Counter(label: "matchcast_fcm_access_tokens_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// `matchcast_deliveries_total{sink="fcm", outcome}`: `delivered`, `invalid_token`, `dead_letter`, `failed`.
    func deliveries(outcome: String, count: Int) {
        guard count > 0 else { return }
        Counter(label: "matchcast_deliveries_total", dimensions: [("sink", "fcm"), ("outcome", outcome)], factory: factory)
            .increment(by: count)
    }
}
