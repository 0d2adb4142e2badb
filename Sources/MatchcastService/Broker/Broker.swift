import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastStore
import ServiceLifecycle

/// The whole broker wired together: store → lifecycle manager → service facade, plus the
/// long-running parts (`PollSupervisor`, `LifecycleTicker`) to run in one `ServiceGroup` with the
/// HTTP server. `serve` and the tests build it the same way.
public struct Broker: Sendable {
    public let service: LiveActivityService
    public let feedHealth: FeedHealth
    /// Long-running parts, in dependency order.
    public let services: [any Service]

    public init(
        store: any MatchcastStore, transport: any FeedTransport, sinks: [any DeliverySink],
        settings: BrokerSettings, timing: PollTimingPolicy, clock: any Clock<Duration>,
        now: @escaping @Sendable () -> Date, metrics: BrokerMetrics = BrokerMetrics(), logger: Logger
    ) {
        let dispatcher = DeliveryDispatcher(sinks: sinks, metrics: metrics, logger: logger)
        let lifecycle = LifecycleManager(
            store: store, dispatcher: dispatcher, settings: settings, metrics: metrics, now: now, logger: logger)
        let health = FeedHealth()
        let service = LiveActivityService(
            store: store, lifecycle: lifecycle, feedReachable: { health.isReachable }, now: now, metrics: metrics,
            logger: logger)
        self.service = service
        feedHealth = health
        services = [
            PollSupervisor(service: service, transport: transport, timing: timing, clock: clock, now: now,
                           metrics: metrics, health: health, logger: logger),
            LifecycleTicker(service: service, clock: clock, now: now, logger: logger),
        ]
    }

    /// Brings persisted activities up to date after a restart; call before running `services`.
    public func restore() async throws(ServiceError) {
        try await service.lifecycle.restore()
    }
}
