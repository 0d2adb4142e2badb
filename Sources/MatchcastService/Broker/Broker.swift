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

    /// With a store replicas share (PostgreSQL), this broker is one replica: it runs only the matches whose lease
    /// it holds (`replicaId` names it in the lease rows; unique per process; `leaseTTL` is how long a dead
    /// replica's matches wait before another takes them). Otherwise it runs every match.
    /// `feeds`: every feed it polls, each with its own live list (one feed: `FeedRouter(transport)`). `deadTokens`: the
    /// relay `sinks` report dead tokens to (the APNs sink's), applied to this broker's service by one of `services`.
    /// `listServesMatches`: a feed's live list that carries whole matches serves the matches it shows, which are then
    /// not polled on their own (`PollSupervisor`).
    public init(
        store: any MatchcastStore, feeds: FeedRouter, sinks: [any DeliverySink], deadTokens: DeadTokenRelay? = nil,
        settings: BrokerSettings, timing: PollTimingPolicy, listServesMatches: Bool = false, clock: any Clock<Duration>,
        now: @escaping @Sendable () -> Date, metrics: BrokerMetrics = BrokerMetrics(),
        replicaId: String = Broker.defaultReplicaId, leaseTTL: Duration = .seconds(3), logger: Logger
    ) {
        let ownership = (store as? any ReplicaStore).map {
            MatchOwnership(shared: MatchOwnership.Shared(store: $0, replicaId: replicaId, leaseTTL: leaseTTL))
        } ?? .solo
        let dispatcher = DeliveryDispatcher(sinks: sinks, metrics: metrics, logger: logger)
        let relay = DeliveryRelay(
            store: store, dispatcher: dispatcher, mode: .background, metrics: metrics, clock: clock, logger: logger)
        let lifecycle = LifecycleManager(
            store: store, relay: relay, ownership: ownership, settings: settings, metrics: metrics, now: now, logger: logger)
        let health = FeedHealth(names: feeds.members.map(\.name), metrics: metrics)
        let service = LiveActivityService(
            store: store, lifecycle: lifecycle, feeds: { health.reachability },
            providers: { [groups = feeds.providerGroups] in groups.flatMap(\.status) },
            sinksHealthy: { sinks.allSatisfy(\.isHealthy) }, sinksTake: { kind, topic in sinks.contains { $0.takes(kind, topic: topic) } },
            apps: settings.apps,
            now: now, metrics: metrics, clock: clock,
            logger: logger)
        self.service = service
        feedHealth = health
        self.relay = relay
        // Services stop in reverse order: the relay last, after the parts that make deliveries.
        services = [
            relay,
            PollSupervisor(service: service, feeds: feeds, timing: timing, clock: clock, now: now,
                           metrics: metrics, health: health, listServesMatches: listServesMatches, logger: logger),
            LifecycleTicker(service: service, clock: clock, now: now, logger: logger),
        ] + (ownership.isSolo ? [] : [ReplicaCoordinator(service: service, clock: clock, logger: logger)])
            + (deadTokens.map { [$0.applying(to: service, logger: logger)] } ?? [])
    }

    /// One feed; with `listServesMatches`, its live list carries whole matches and serves those it shows.
    public init(
        store: any MatchcastStore, transport: any FeedTransport, sinks: [any DeliverySink], deadTokens: DeadTokenRelay? = nil,
        settings: BrokerSettings, timing: PollTimingPolicy, listServesMatches: Bool = false, clock: any Clock<Duration>,
        now: @escaping @Sendable () -> Date, metrics: BrokerMetrics = BrokerMetrics(),
        replicaId: String = Broker.defaultReplicaId, leaseTTL: Duration = .seconds(3), logger: Logger
    ) {
        self.init(
            store: store, feeds: FeedRouter(transport, listCarriesWholeMatches: listServesMatches), sinks: sinks, deadTokens: deadTokens,
            settings: settings, timing: timing, listServesMatches: listServesMatches, clock: clock,
            now: now, metrics: metrics, replicaId: replicaId, leaseTTL: leaseTTL, logger: logger)
    }

    /// This process on this host, e.g. `web-1:4242`: unique among running replicas.
    public static var defaultReplicaId: String {
        "\(ProcessInfo.processInfo.hostName):\(ProcessInfo.processInfo.processIdentifier)"
    }

    /// After a restart, before running `services`: the outbox's queued deliveries first (same ids, same order),
    /// then persisted activities brought up to date.
    /// A replica restores nothing here: it takes its matches one by one as it gains their leases.
    public func restore() async throws(ServiceError) {
        guard service.lifecycle.ownership.isSolo else { return }
        try await relay.recover()
        try await service.lifecycle.restore()
    }
}
