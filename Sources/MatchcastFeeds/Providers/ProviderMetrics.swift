import Metrics

/// A provider's metrics: `matchcast_feed_provider_healthy{provider}` (1 healthy, 0 disabled),
/// `matchcast_feed_provider_requests_total{provider,outcome}` and `matchcast_feed_provider_switches_total{provider}`
/// (games that moved to it from another provider).
struct ProviderMetrics: Sendable {
    enum Outcome: String, CaseIterable {
        /// A usable answer.
        case ok
        /// An error, a timeout, a status but 200/304/404, a body that could not be read.
        case failed
        /// An answer behind what was shown, or frozen while another provider moved on.
        case stale
        /// The provider does not know the game.
        case notFound = "not_found"
        /// Not asked: its budget was spent.
        case budget
    }

    private let healthyGauge: Gauge
    private let requests: [Outcome: Counter]
    private let switches: Counter

    init(provider: String) {
        healthyGauge = Gauge(label: "matchcast_feed_provider_healthy", dimensions: [("provider", provider)])
        requests = Dictionary(uniqueKeysWithValues: Outcome.allCases.map {
            ($0, Counter(label: "matchcast_feed_provider_requests_total", dimensions: [("provider", provider), ("outcome", $0.rawValue)]))
        })
        switches = Counter(label: "matchcast_feed_provider_switches_total", dimensions: [("provider", provider)])
        healthyGauge.record(1)
    }

    func request(_ outcome: Outcome) { requests[outcome]?.increment() }
    func healthy(_ healthy: Bool) { healthyGauge.record(healthy ? 1 : 0) }
    func switchedTo() { switches.increment() }
}
