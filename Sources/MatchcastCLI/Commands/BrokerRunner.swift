import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastHTTP
import MatchcastService
import MatchcastStore
import Metrics
import Prometheus
import ServiceLifecycle

/// Builds the broker from a configuration and runs it until SIGTERM/SIGINT.
struct BrokerRunner {
    /// How long a graceful shutdown (SIGTERM, SIGINT) may take before what is left of it is cancelled.
    static let shutdownBound = Duration.seconds(30)

    let configuration: BrokerConfiguration

    func run() async throws {
        let config = configuration
        LoggingSystem.bootstrap { label in
            switch config.logFormat {
            case .json:
                var handler = JSONLogHandler(label: label)
                handler.logLevel = config.logLevel
                return handler
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = config.logLevel
                return handler
            }
        }
        let logger = Logger(label: "matchcast")
        let registry = PrometheusCollectorRegistry()
        var metricsFactory = PrometheusMetricsFactory(registry: registry)
        metricsFactory.durationHistogramBuckets[BrokerMetrics.fanOutDurationLabel] = BrokerMetrics.fanOutDurationBuckets
        MetricsSystem.bootstrap(metricsFactory)

        let feedSpecs: [FeedSpec]
        let providers: [ProviderEntry]
        let store: any MatchcastStore
        do {
            feedSpecs = config.feed.trimmingCharacters(in: .whitespaces).isEmpty ? [] : try FeedSpec.list(parsing: config.feed)
            providers = try ProviderEntry.list(parsing: config.providers)
            store = try await StoreURL(config.store).makeStore()
        } catch {
            StandardStreams.err("matchcast serve: invalid configuration: \(error)")
            throw ExitCode(2)
        }
        let needsClient = feedSpecs.contains(where: \.needsHTTPClient) || providers.contains(where: \.spec.needsHTTPClient)
            || SinkFactory.needsHTTPClient(config.sinks)
        let client = needsClient ? HTTPClient(eventLoopGroupProvider: .singleton, configuration: Self.clientConfiguration) : nil
        do {
            // A PostgreSQL store's pool runs around the broker: before `restore()`, until every service stopped.
            try await withStoreRunning(store) {
                try await serve(
                    feedSpecs: feedSpecs, providers: providers, store: store, client: client, registry: registry, logger: logger)
            }
        } catch {
            try? await client?.shutdown()
            throw error
        }
        try await client?.shutdown()
    }

    /// The feed's (and the webhook's) HTTP client: keep-alive connections, up to `connectionsPerHost` to each host.
    /// Polls of one feed host share them; with AsyncHTTPClient's default of 8, a few thousand live matches at one
    /// poll a second queued for a connection.
    static let connectionsPerHost = 64

    static var clientConfiguration: HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration()
        configuration.connectionPool = .init(
            idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: connectionsPerHost)
        // Matchcast bootstraps no tracer: without this every request would still open and close a no-op span.
        configuration.tracing.tracer = nil
        return configuration
    }

    private func serve(
        feedSpecs: [FeedSpec], providers: [ProviderEntry], store: any MatchcastStore, client: HTTPClient?,
        registry: PrometheusCollectorRegistry,
        logger: Logger
    ) async throws {
        let config = configuration
        let clock = EventLoopClock()  // real time; a poll on an event loop sleeps on that loop
        let feeds = try FeedRouter(
            specs: feedSpecs, providers: providers, failover: config.failover.settings, client: client, clock: clock, logger: logger)
        // APNs answers that a token is dead reach the broker built below through this relay.
        let deadTokens = DeadTokenRelay()
        let sinks: [any DeliverySink]
        do {
            var factory = SinkFactory(configuration: config, client: client, logger: logger)
            factory.routesByTarget = true
            sinks = try factory.makeSinks(deadLetters: { StoreDeadLetters(store: store, sink: $0, logger: logger) }, deadTokens: deadTokens)
        } catch {
            StandardStreams.err("matchcast serve: \(error)")
            throw ExitCode(2)
        }
        defer { SinkFactory.shutdown(sinks) }
        let settings = BrokerSettings(
            bundleId: config.topicBundleId,
            activityPolicy: ActivityPolicy(
                coalesceInterval: .milliseconds(Int64(config.coalesceSeconds * 1000)),
                staleAfterPolls: config.staleAfterPolls,
                minimumStaleness: .milliseconds(Int64(config.minimumStalenessSeconds * 1000)),
                dismissalDelay: .milliseconds(Int64(config.dismissalSeconds * 1000)),
                restartAfter: .milliseconds(Int64(config.restartAfterSeconds * 1000)),
                highPriorityPerHour: config.highPriorityPerHour),
            pushToStartSpacing: .milliseconds(Int64(config.pushToStartSpacingSeconds * 1000)),
            otherApps: config.apps.map(\.catalogEntry))
        let timing = PollTimingPolicy(
            defaultInterval: .milliseconds(config.defaultPollMs), minInterval: .milliseconds(config.minPollMs),
            maxInterval: .milliseconds(config.maxPollMs))
        let broker = Broker(
            store: store, feeds: feeds, sinks: sinks, deadTokens: deadTokens, settings: settings, timing: timing,
            listServesMatches: config.liveListServesMatches, clock: clock, now: { Date() }, replicaId: config.replicaId.isEmpty ? Broker.defaultReplicaId : config.replicaId,
            leaseTTL: .milliseconds(Int64(config.leaseTTLSeconds * 1000)), logger: logger)
        let channels: BroadcastChannels?
        do {
            channels = try SinkFactory(configuration: config, client: client, logger: logger)
                .broadcastChannels(sinks: sinks, store: store, settings: settings, clock: clock)
        } catch {
            StandardStreams.err("matchcast serve: \(error)")
            throw ExitCode(2)
        }
        if let channels { await broker.useBroadcastChannels(channels) }
        try await broker.restore()
        let app = buildApplication(
            service: broker.service,
            configuration: APIConfiguration(
                host: config.host, port: config.port, adminKey: config.adminKey.isEmpty ? nil : config.adminKey,
                maxBodyBytes: config.maxBodyBytes,
                appAdminKeys: Dictionary(config.apps.map { ($0.id, $0.adminKey) }, uniquingKeysWith: { first, _ in first })),
            registry: registry, services: broker.services + (channels.map { [$0] } ?? []),
            logger: logger)
        logger.info("matchcast serve", metadata: [
            "listen": "\(config.host):\(config.port)", "store": "\((try? StoreURL(config.store))?.description ?? "?")", "feeds": "\((feedSpecs.map(\.publicName) + providers.map { "\($0.spec.publicName) [\($0.tier.rawValue)]" }).joined(separator: ", "))",
            "sinks": "\(config.sinks.map { $0.hasPrefix("webhook:") ? "webhook" : $0 })",
            "apps": "\(([AppCatalog.defaultId] + config.apps.map(\.id)).joined(separator: ", "))",
        ])
        // A shutdown that cannot finish (the database gone: every store call waits for it) is cut short after
        // `shutdownBound`: what is left is cancelled and the process exits; the outbox keeps what was not sent.
        var group = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        group.maximumGracefulShutdownDuration = Self.shutdownBound
        try await ServiceGroup(configuration: group).run()
        logger.info("stopped")
    }
}
