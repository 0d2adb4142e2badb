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
/// last one leaves, from the follow change itself (no relisting of every followed match, which happens every 30 s),
/// in real time on `EventLoopClock` as serve runs it.
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
        let services: RunningServices

        var service: LiveActivityService { broker.service }

        func stop() async throws { try await services.stop() }

        /// Waits until `condition` holds (checked every 10 ms, up to `limit`); how long it took. These tests run on their
        /// own after the parallel ones (`Scripts/test`), so a poll 100 ms apart is not starved by hundreds of others.
        @discardableResult
        func wait(_ what: String = "condition", until condition: () -> Bool, limit: Duration = .seconds(10)) async throws -> Duration {
            let begin = ContinuousClock.now
            while !condition() {
                try #require(begin.duration(to: .now) < limit, "\(what) not reached within \(limit)")
                try await Task.sleep(for: .milliseconds(10))
            }
            return begin.duration(to: .now)
        }
    }

    /// Real time, as serve runs it (`EventLoopClock`), with every poll this far apart.
    static let interval = Duration.milliseconds(100)

    /// A broker on `store` polling the fake feed; with a PostgreSQL store, one replica named `replicaId`, whose leases
    /// last a minute: a loaded machine must not move the match to the other replica mid-test (takeovers are
    /// `ReplicaFailoverTests`' subject, not this suite's).
    static func start(store: any MatchcastStore = InMemoryStore(), replicaId: String = "solo") async throws -> Running {
        let clock = EventLoopClock()
        let begin = clock.now
        let feed = try FakeFeed(seed: 1, speed: 1, scenarios: ["football", "basketball"])
        let transport = CountingTransport(FakeFeedTransport(feed: feed, clock: clock, start: begin))
        let broker = Broker(
            store: store, transport: transport, sinks: [CapturingSink()],
            settings: BrokerSettings(activityPolicy: ActivityPolicy(), seed: 1),
            timing: PollTimingPolicy(defaultInterval: interval, minInterval: interval, maxInterval: interval, jitter: 0),
            clock: clock, now: { Date() }, replicaId: replicaId, leaseTTL: .seconds(60), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        return Running(broker: broker, transport: transport, services: RunningServices(broker.services))
    }

    @Test("the first follower starts the match's polls; they stop soon after the last follower leaves, not before",
          .timeLimit(.minutes(1)))
    func sourcesFollowTheFollows() async throws {
        let running = try await Self.start()
        let service = running.service
        let (first, second) = (try await service.registerDevice(), try await service.registerDevice())
        try await Task.sleep(for: Self.interval * 3)
        #expect(running.transport.polls("football") == 0, "nobody follows it yet")

        _ = try await service.follow(deviceId: first.deviceId, matchId: "football")
        try await running.wait { running.transport.polls("football") > 0 }

        // A second follower, then the first leaves: the match still has one, so its polls go on.
        _ = try await service.follow(deviceId: second.deviceId, matchId: "football")
        try await service.unfollow(deviceId: first.deviceId, matchId: "football")
        let stillFollowed = running.transport.polls("football")
        try await running.wait { running.transport.polls("football") >= stillFollowed + 3 }

        // The last follower leaves: the polls stop within 1.5 s (about 15 more would come meanwhile), and none come
        // after. (How many fit in before the stop depends on the machine's load: a bound on them only, not a count.)
        try await service.unfollow(deviceId: second.deviceId, matchId: "football")
        let left = running.transport.polls("football")
        try await Task.sleep(for: Self.interval * 15)
        let quiet = running.transport.polls("football")
        #expect(quiet - left < 10, "polled \(quiet - left) times in the 1.5 s after its last follower left")
        try await Task.sleep(for: Self.interval * 10)
        #expect(running.transport.polls("football") == quiet, "still polled 1.5 s after its last follower left")

        // Another match followed meanwhile is polled on its own; the first one stays quiet.
        _ = try await service.follow(deviceId: second.deviceId, matchId: "basketball")
        try await running.wait { running.transport.polls("basketball") >= 3 }
        #expect(running.transport.polls("football") == quiet)

        // Following it again starts it again.
        _ = try await service.follow(deviceId: first.deviceId, matchId: "football")
        try await running.wait { running.transport.polls("football") > quiet }
        try await running.stop()
    }

    @Test("a replica that claims a match through an API call asks about that match alone, not for a list of every followed match",
          .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage), .timeLimit(.minutes(1)))
    func aClaimNamesItsMatch() async throws {
        try await ReplicaRoutingTests.withStore { store in
            // Not started: the supervisor would take the changes before the test reads them.
            let clock = EventLoopClock()
            let broker = Broker(
                store: store, transport: FakeFeedTransport(feed: try FakeFeed(seed: 1, speed: 1, scenarios: ["football"]), clock: clock),
                sinks: [CapturingSink()], settings: BrokerSettings(activityPolicy: ActivityPolicy(), seed: 1),
                timing: PollTimingPolicy(), clock: clock, now: { Date() }, replicaId: "a", leaseTTL: .seconds(60), logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
            let service = broker.service
            let device = try await service.registerDevice()
            _ = service.followChanges.take()

            _ = try await service.follow(deviceId: device.deviceId, matchId: "football")
            #expect(service.lifecycle.ownership.holds("football"), "the follow claimed the match")
            let changes = service.followChanges.take()
            #expect(changes.unsure == ["football"], "the claim asks the store about the match")
            #expect(changes.followed == ["football"])
            #expect(!changes.relist, "a claim of one match listed every followed match again")
        }
    }

    @Test("across two replicas: follows through either start the match's polls on the replica that runs it, and the last unfollow, through the other, stops them",
          .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage), .timeLimit(.minutes(2)))
    func sourcesFollowTheFollowsAcrossReplicas() async throws {
        try await ReplicaRoutingTests.withStore { store in
            let a = try await Self.start(store: store, replicaId: "a")
            let b = try await Self.start(store: store, replicaId: "b")
            let (first, second) = (try await a.service.registerDevice(), try await b.service.registerDevice())

            // The first follow makes the match wanted: one of the two claims it (the one that got the call, or the
            // other's scan for unowned matches, whichever comes first) and polls it; the other never does.
            _ = try await b.service.follow(deviceId: first.deviceId, matchId: "football")
            try await a.wait("a replica polls the match", until: { a.transport.polls("football") + b.transport.polls("football") > 0 })
            let (owner, other) = a.service.lifecycle.ownership.holds("football") ? (a, b) : (b, a)
            #expect(owner.service.lifecycle.ownership.holds("football"))
            // A second follower, then the first leaves, both through the replica that does not run the match.
            _ = try await other.service.follow(deviceId: second.deviceId, matchId: "football")
            try await other.service.unfollow(deviceId: first.deviceId, matchId: "football")
            let stillFollowed = owner.transport.polls("football")
            try await owner.wait("polls go on while one follower is left", until: { owner.transport.polls("football") >= stillFollowed + 3 })
            #expect(other.transport.polls("football") == 0, "the replica that does not run the match never polls it")

            // The last follower leaves through the other replica: the owner's polls stop within 1.5 s (about 15 would
            // come meanwhile), and none come after.
            try await other.service.unfollow(deviceId: second.deviceId, matchId: "football")
            let left = owner.transport.polls("football")
            try await Task.sleep(for: Self.interval * 15)
            let quiet = owner.transport.polls("football")
            #expect(quiet - left < 10, "polled \(quiet - left) times in the 1.5 s after its last follower left through the other replica")
            try await Task.sleep(for: Self.interval * 10)
            #expect(owner.transport.polls("football") == quiet, "still polled 1.5 s after its last follower left")
            #expect(other.transport.polls("football") == 0)

            // Followed again: polled again, by whichever replica runs it now.
            _ = try await other.service.follow(deviceId: first.deviceId, matchId: "football")
            try await a.wait("polled again once followed again", until: {
                a.transport.polls("football") + b.transport.polls("football") > quiet
            })
            try await a.stop()
            try await b.stop()
        }
    }
}
