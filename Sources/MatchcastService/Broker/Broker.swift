import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastStore
import ServiceLifecycle

/// The whole broker wired together: store → lifecycle manager → service facade, plus the
/// long-running parts (`DeliveryRelay`, `PollSupervisor`, `LifecycleTicker`) to run in one `ServiceGroup`
/// with the HTTP server. `serve` and the tests build it the same way.
public struct Broker: Sendable {
    public let service: LiveActivityService
    public let feedHealth: FeedHealth
    /// Takes the outbox to the sinks, in the background.
    public let relay: DeliveryRelay
    /// Long-running parts, in dependency order.
    public let services: [any Service]

    public init(
        store: any MatchcastStore, transport: any FeedTransport, sinks: [any DeliverySink],
        settings: BrokerSettings, timing: PollTimingPolicy, clock: any Clock<Duration>,
        now: @escaping @Sendable () -> Date, metrics: BrokerMetrics = BrokerMetrics(), logger: Logger
    ) {
        let dispatcher = DeliveryDispatcher(sinks: sinks, metrics: metrics, logger: logger)
        let relay = DeliveryRelay(
            store: store, dispatcher: dispatcher, mode: .background, metrics: metrics, clock: clock, logger: logger)
        let lifecycle = LifecycleManager(
            store: store, relay: relay, settings: settings, metrics: metrics, now: now, logger: logger)
        let health = FeedHealth()
        let service = LiveActivityService(
            store: store, lifecycle: lifecycle, feedReachable: { health.isReachable },
            sinksHealthy: { sinks.allSatisfy(\.isHealthy) }, now: now, metrics: metrics,
            logger: logger)
        self.service = service
        feedHealth = health
        self.relay = relay
        // Services stop in reverse order: the relay last, after the parts that make deliveries.
        services = [
            relay,
            PollSupervisor(service: service, transport: transport, timing: timing, clock: clock, now: now,
                           metrics: metrics, health: health, logger: logger),
            LifecycleTicker(service: service, clock: clock, now: now, logger: logger),
        ]
    }

    /// After a restart, before running `services`: the outbox's queued deliveries first (same ids, same order),
    /// then persisted activities brought up to date.
    public func restore() async throws(ServiceError) {
        try await relay.recover()
        try await service.lifecycle.restore()
    }
}
