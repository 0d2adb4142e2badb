import CoreMetrics

/// The APNs sink's counters, made through an injected factory.
struct APNsMetrics: Sendable {
    let factory: any MetricsFactory

    /// `matchcast_apns_responses_total{status, reason}`: one per answer APNs gave.
    func response(status: Int, reason: String?) {
        Counter(
            label: "matchcast_apns_responses_total",
            dimensions: [("status", String(status)), ("reason", APNsAnswer.metricReason(reason))],
            factory: factory
        ).increment()
    }

    /// `matchcast_apns_request_errors_total{kind}`: one per attempt that got no answer (`timeout`,
    /// `connection_error`).
    func requestError(kind: String) {
        Counter(label: "matchcast_apns_request_errors_total", dimensions: [("kind", kind)], factory: factory).increment()
    }

    /// `matchcast_deliveries_total{sink="apns", outcome}`: `delivered`, `invalid_token`, `dead_letter`, `failed`.
    func deliveries(outcome: String, count: Int) {
        guard count > 0 else { return }
        Counter(label: "matchcast_deliveries_total", dimensions: [("sink", "apns"), ("outcome", outcome)], factory: factory)
            .increment(by: count)
    }
}
