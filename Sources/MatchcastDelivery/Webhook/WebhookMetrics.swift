import CoreMetrics

/// The webhook sink's counters, made through an injected factory.
struct WebhookMetrics: Sendable {
    let factory: any MetricsFactory

    /// `matchcast_webhook_requests_total{outcome}`: one per attempt.
    func request(outcome: WebhookAttempt.Outcome) {
        Counter(label: "matchcast_webhook_requests_total", dimensions: [("outcome", outcome.rawValue)], factory: factory)
            .increment()
    }

    /// `matchcast_deliveries_total{sink="webhook", outcome}`: `delivered`, `dead_letter` or `failed`.
    func deliveries(outcome: String, count: Int) {
        guard count > 0 else { return }
        Counter(label: "matchcast_deliveries_total", dimensions: [("sink", "webhook"), ("outcome", outcome)], factory: factory)
            .increment(by: count)
    }
}
