import CoreMetrics
import MatchcastCore

/// The broker's own metrics, made through an injected factory so tests and several brokers in one
/// process do not share the global one.
public struct BrokerMetrics: Sendable {
    private let factory: any MetricsFactory

    public init(factory: any MetricsFactory = MetricsSystem.factory) {
        self.factory = factory
    }

    /// `matchcast_polls_total{source, outcome}`: updated, unchanged, stale, failed.
    public func poll(source: String, outcome: String) {
        Counter(label: "matchcast_polls_total", dimensions: [("source", source), ("outcome", outcome)], factory: factory)
            .increment()
    }

    /// The poll metrics of one source kind, made once: a poll then only counts (no lookup of the metric by its
    /// label and dimensions each time).
    public func polls(source: String) -> PollMetrics {
        func counter(_ outcome: String) -> Counter {
            Counter(label: "matchcast_polls_total", dimensions: [("source", source), ("outcome", outcome)], factory: factory)
        }
        return PollMetrics(
            updated: counter("updated"), unchanged: counter("unchanged"), stale: counter("stale"), failed: counter("failed"),
            listed: counter("listed"), interval: Gauge(label: "matchcast_poll_interval_seconds", dimensions: [("source", source)], factory: factory))
    }

    /// `matchcast_feed_reachable{feed}`: 1 while the feed's last poll succeeded (or none was made yet), 0 after one
    /// failed. Made once per feed; recorded when it changes.
    public func feedReachable(feed: String) -> Gauge {
        Gauge(label: "matchcast_feed_reachable", dimensions: [("feed", feed)], factory: factory)
    }

    /// `matchcast_poll_interval_seconds{source}`: the current server-driven interval.
    public func pollInterval(source: String, _ interval: Duration) {
        Gauge(label: "matchcast_poll_interval_seconds", dimensions: [("source", source)], factory: factory)
            .record(interval.seconds)
    }

    /// `matchcast_devices_registered_total{app}`: one per device registered, by its app (docs/apps.md).
    public func deviceRegistered(app: String) {
        Counter(label: "matchcast_devices_registered_total", dimensions: [("app", app)], factory: factory).increment()
    }

    /// `matchcast_deliveries_total{sink, outcome}`.
    public func deliveries(sink: String, outcome: String, count: Int) {
        Counter(label: "matchcast_deliveries_total", dimensions: [("sink", sink), ("outcome", outcome)], factory: factory)
            .increment(by: count)
    }

    /// `matchcast_fanout_duration_seconds`: a match update's fan-out to the match's open activities, from its start to
    /// the last of them saved and handed to the relay (a histogram, through the factory's timer).
    public func fanOutDuration() -> CoreMetrics.Timer {
        CoreMetrics.Timer(label: Self.fanOutDurationLabel, factory: factory)
    }

    public static let fanOutDurationLabel = "matchcast_fanout_duration_seconds"
    /// The histogram buckets `fanOutDuration()` wants from a factory that takes them per label (Prometheus's): a
    /// fan-out to a few followers takes well under the usual first bucket (5 ms), one to a million past its last (10 s).
    public static let fanOutDurationBuckets: [Duration] = [
        .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100),
        .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500), .seconds(5), .seconds(10), .seconds(30),
        .seconds(60),
    ]

    /// `matchcast_outbox_deliveries`: deliveries saved but not yet handed to every sink.
    public func outboxDepth(_ count: Int) {
        Gauge(label: "matchcast_outbox_deliveries", factory: factory).record(Double(count))
    }

    /// `matchcast_feed_errors_total{reason}`: bad snapshots and unreachable feeds.
    public func feedError(reason: String) {
        Counter(label: "matchcast_feed_errors_total", dimensions: [("reason", reason)], factory: factory).increment()
    }

    /// `matchcast_key_event_updates_total{priority}`: match updates with key events, by the priority they went at:
    /// 10, or 5 once the match's hourly ceiling of priority-10 pushes was spent (`HighPriorityLedger`).
    public func keyEventUpdate(priority: Int) {
        Counter(label: "matchcast_key_event_updates_total", dimensions: [("priority", String(priority))], factory: factory)
            .increment()
    }

    /// `matchcast_high_priority_pushes_total{target}`: pushes made at priority 10, one per delivery, by what they went
    /// to: `updateToken` (an activity: these spend the device's update budget, `HighPriorityLedger`), `channel` (a
    /// broadcast, spending the budget of every device listening), `pushToStartToken` (starts, with a budget of their
    /// own). Made once per target kind.
    public func highPriorityPushes(target: PushTarget.Kind) -> Counter {
        Counter(label: "matchcast_high_priority_pushes_total", dimensions: [("target", target.rawValue)], factory: factory)
    }

    /// `matchcast_activities{state}`, `matchcast_follows`, `matchcast_tokens{kind}`.
    public func census(activities: [ActivityLifecycle.Phase: Int], follows: Int, tokens: [String: Int]) {
        for phase in [ActivityLifecycle.Phase.waiting, .starting, .active] {
            Gauge(label: "matchcast_activities", dimensions: [("state", phase.rawValue)], factory: factory)
                .record(Double(activities[phase, default: 0]))
        }
        Gauge(label: "matchcast_follows", factory: factory).record(Double(follows))
        for (kind, count) in tokens {
            Gauge(label: "matchcast_tokens", dimensions: [("kind", kind)], factory: factory).record(Double(count))
        }
    }
}

/// `matchcast_polls_total{source, outcome}` and `matchcast_poll_interval_seconds{source}` of one source kind.
public struct PollMetrics: Sendable {
    public let updated: Counter
    public let unchanged: Counter
    public let stale: Counter
    public let failed: Counter
    /// A match's poll left to its feed's live list, which serves it.
    public let listed: Counter
    public let interval: Gauge
}
