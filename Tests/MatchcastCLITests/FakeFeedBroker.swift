import Foundation
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import ServiceLifecycle

/// A broker as the serve tests run one: on the fake feed's football match, an in-memory store, a hand-moved clock,
/// and the sinks (and dead-token relay) the test built as `serve` builds them.
struct FakeFeedBroker {
    let clock = ManualClock()
    let store = InMemoryStore()
    let broker: Broker

    init(sinks: [any DeliverySink], deadTokens: DeadTokenRelay, settings: BrokerSettings) throws {
        let clock = clock
        let feed = try FakeFeed(seed: 1, speed: 10, scenarios: ["football"])
        broker = Broker(
            store: store, transport: FakeFeedTransport(feed: feed, clock: clock, start: .init(offset: .zero)), sinks: sinks,
            deadTokens: deadTokens, settings: settings,
            timing: PollTimingPolicy(defaultInterval: .seconds(1), minInterval: .milliseconds(100), maxInterval: .seconds(5), jitter: 0),
            clock: clock, now: { Date(timeIntervalSince1970: ServeAPNsTests.epoch + clock.now.offset.seconds) },
            logger: ServeAPNsTests.quiet)
    }

    /// Restores the broker, runs its services around `body`, then shuts them down gracefully.
    func run<T>(_ body: () async throws -> T) async throws -> T {
        try await broker.restore()
        let group = ServiceGroup(configuration: .init(services: broker.services, logger: ServeAPNsTests.quiet))
        let running = Task { try await group.run() }
        do {
            let value = try await body()
            await group.triggerGracefulShutdown()
            try await running.value
            return value
        } catch {
            running.cancel()
            throw error
        }
    }
}
