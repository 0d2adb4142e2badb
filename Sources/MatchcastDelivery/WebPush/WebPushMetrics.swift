import CoreMetrics

/// The Web Push sink's counters, made through an injected factory.
struct WebPushMetrics: Sendable {
    let factory: any MetricsFactory

    /// `matchcast_webpush_requests_total{outcome}`: one per attempt. `accepted`, `throttled` (429), `server_error`
    /// (5xx), `gone` (404, 410), `too_large` (413), `refused` (any other status), `timeout`, `connection_error`.
    func request(outcome: String) {
        Counter(label: "matchcast_webpush_requests_total", dimensions: [("outcome", outcome)], factory: factory).increment()
    }

    /// `matchcast_deliveries_total{sink="webpush", outcome}`: `delivered`, `dead_letter`, or `superseded` (a waiting
    /// update replaced by a newer push of its match before it was sent).
    func deliveries(outcome: String, count: Int = 1) {
        guard count > 0 else { return }
        Counter(label: "matchcast_deliveries_total", dimensions: [("sink", "webpush"), ("outcome", outcome)], factory: factory)
            .increment(by: count)
    }
}
