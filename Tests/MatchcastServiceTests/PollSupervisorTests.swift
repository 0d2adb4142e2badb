import Foundation
import Logging
import MatchcastCore
import MatchcastFeeds
import MatchcastService
import MatchcastStore
import MatchcastTesting
import ServiceLifecycle
import Synchronization
import Testing

/// The poll supervisor starts a match's source when the match gains its first follower and stops it after the
/// last one leaves, from the follow change itself (no relisting of every followed match), on a manual clock.
@Suite("poll supervisor: sources come and go with the follows")
struct PollSupervisorTests {
    /// The fake feed, counting requests per path.
    final class CountingTransport: FeedTransport {
        let inner: FakeFeedTransport
        private let counts = Mutex<[String: Int]>([:])

        init(_ inner: FakeFeedTransport) { self.inner = inner }

        func fetch(_ request: FeedRequest) async throws -> FeedResponse {
            counts.withLock { $0[request.path.split(separator: "?").first.map(String.init) ?? request.path, default: 0] += 1 }
            return try await inner.fetch(request)
        }

        func polls(_ matchId: String) -> Int { counts.withLock { $0["/matches/" + matchId] ?? 0 } }
    }

    struct Running {
        let broker: Broker
        let transport: CountingTransport
        let clock: ManualClock
        let group: ServiceGroup
        let task: Task<Void, any Error>

        var service: LiveActivityService { broker.service }

        func stop() async throws {
            await group.triggerGracefulShutdown()
            try await task.value
        }

        /// Lets the broker's tasks run without moving the clock.
        func settle() async {
            for _ in 0..<200 { await Task.yield() }
            try? await Task.sleep(for: .milliseconds(20))
            for _ in 0..<200 { await Task.yield() }
        }

        /// Advances virtual time deadline by deadline until `condition` holds; the virtual time it took.
        @discardableResult
        func drive(until condition: () -> Bool, limit: Int = 2_000) async throws -> Duration {
            let begin = clock.now
            var steps = 0
            while true {
                await settle()
                if condition() { return begin.duration(to: clock.now) }
                if let deadline = clock.nextDeadline { clock.advance(to: deadline) }
                steps += 1
                try #require(steps < limit, "condition not reached after \(steps) steps")
            }
        }

        /// Advances virtual time by `duration`, deadline by deadline.
        func run(for duration: Duration) async {
            let end = clock.now.advanced(by: duration)
            while true {
                await settle()
                guard let deadline = clock.nextDeadline, deadline <= end else { break }
                clock.advance(to: deadline)
            }
            clock.advance(to: end)
            await settle()
        }
    }

    static let interval = Duration.seconds(1)

    static func start() async throws -> Running {
        let clock = ManualClock()
        let feed = try FakeFeed(seed: 1, speed: 1, scenarios: ["football", "basketball"])
        let transport = CountingTransport(FakeFeedTransport(feed: feed, clock: clock, start: .init(offset: .zero)))
        let broker = Broker(
            store: InMemoryStore(), transport: transport, sinks: [CapturingSink()],
            settings: BrokerSettings(activityPolicy: ActivityPolicy(), seed: 1),
            // Every poll one interval apart, whatever the feed asks.
            timing: PollTimingPolicy(defaultInterval: interval, minInterval: interval, maxInterval: interval, jitter: 0),
            clock: clock, now: { FakeFeed.epoch.addingTimeInterval(clock.now.offset.seconds) }, logger: Logger(label: "test"))
        let group = ServiceGroup(configuration: .init(services: broker.services, logger: Logger(label: "test")))
        let task = Task { try await group.run() }
        return Running(broker: broker, transport: transport, clock: clock, group: group, task: task)
    }

    @Test("the first follower starts the match's polls at once; the last to leave stops them after one more poll at most",
          .timeLimit(.minutes(1)))
    func sourcesFollowTheFollows() async throws {
        let running = try await Self.start()
        let service = running.service
        let (first, second) = (try await service.registerDevice(), try await service.registerDevice())
        await running.run(for: .seconds(3))
        #expect(running.transport.polls("football") == 0, "nobody follows it yet")

        _ = try await service.follow(deviceId: first.deviceId, matchId: "football")
        let tookToStart = try await running.drive { running.transport.polls("football") > 0 }
        #expect(tookToStart <= Self.interval)

        // A second follower, then the first leaves: the match still has one, so its polls go on.
        _ = try await service.follow(deviceId: second.deviceId, matchId: "football")
        try await service.unfollow(deviceId: first.deviceId, matchId: "football")
        var before = running.transport.polls("football")
        await running.run(for: Self.interval * 5)
        #expect(running.transport.polls("football") >= before + 4, "one follower left: still polled every interval")

        // The last follower leaves: at most the poll already under way, then none.
        try await service.unfollow(deviceId: second.deviceId, matchId: "football")
        before = running.transport.polls("football")
        await running.run(for: Self.interval * 10)
        #expect(running.transport.polls("football") <= before + 1)

        // Another match followed meanwhile is polled on its own; the first one stays quiet.
        _ = try await service.follow(deviceId: second.deviceId, matchId: "basketball")
        try await running.drive { running.transport.polls("basketball") > 0 }
        let quiet = running.transport.polls("football")
        await running.run(for: Self.interval * 5)
        #expect(running.transport.polls("basketball") >= 5)
        #expect(running.transport.polls("football") == quiet)

        // Following it again starts it again.
        _ = try await service.follow(deviceId: first.deviceId, matchId: "football")
        let tookToRestart = try await running.drive { running.transport.polls("football") > quiet }
        #expect(tookToRestart <= Self.interval)
        try await running.stop()
    }
}
