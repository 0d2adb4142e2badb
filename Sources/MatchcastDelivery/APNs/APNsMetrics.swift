import CoreMetrics

/// The APNs sink's counters, made through an injected factory.
struct APNsMetrics: Sendable {
    let factory: any MetricsFactory

    /// `matchcast_apns_responses_total{status, reason}`: one per answer APNs gave.
    func response(status: Int, reason: String?, count: Int = 1) {
        Counter(
            label: "matchcast_apns_responses_total",
            dimensions: [("status", String(status)), ("reason", APNsAnswer.metricReason(reason))],
            factory: factory
        ).increment(by: count)
    }

    /// `matchcast_apns_request_errors_total{kind}`: one per attempt that got no answer (`timeout`,
    /// `connection_error`).
    func requestError(kind: String, count: Int = 1) {
        Counter(label: "matchcast_apns_request_errors_total", dimensions: [("kind", kind)], factory: factory).increment(by: count)
    }

    /// `matchcast_deliveries_total{sink="apns", outcome}`: `delivered`, `invalid_token`, `dead_letter`, `failed`.
    func deliveries(outcome: String, count: Int) {
        guard count > 0 else { return }
        Counter(label: "matchcast_deliveries_total", dimensions: [("sink", "apns"), ("outcome", outcome)], factory: factory)
            .increment(by: count)
    }

    /// `matchcast_apns_connection_errors_total{kind}`: a connection set-up failed (`connect`, `tls`,
    /// `connect_timeout`) or an open one failed (`stalled`, `goaway`, `protocol`).
    func connectionError(kind: String) {
        Counter(label: "matchcast_apns_connection_errors_total", dimensions: [("kind", kind)], factory: factory).increment()
    }

    /// `matchcast_apns_connections`: HTTP/2 connections open to APNs now.
    func openConnections(_ count: Int) {
        Gauge(label: "matchcast_apns_connections", factory: factory).record(count)
    }

    /// `matchcast_apns_requests_resent_total`: requests sent once more, with the same `apns-id`, because
    /// their connection closed (or refused them) before an answer.
    func resent(count: Int) {
        Counter(label: "matchcast_apns_requests_resent_total", factory: factory).increment(by: count)
    }
}
