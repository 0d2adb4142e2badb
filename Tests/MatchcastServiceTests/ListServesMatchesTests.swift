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

/// With `listServesMatches`, a feed's live list that carries whole matches serves the followed matches it shows: each
/// is polled once on its own, then keeps moving on what the list says; when the list fails, the matches go back to
/// their own polls at once, and leave them again when it answers. Off (the default), every followed match is polled
/// on its own as docs/formats.md says. Real time on `EventLoopClock`, as serve runs it, on a real SQLite file too.
@Suite("a live list serves the matches it shows")
struct ListServesMatchesTests {
    /// The fake feed, counting requests per path; its live list fails while `listFails` is set.
    final class SwitchableTransport: FeedTransport {
        let inner: FakeFeedTransport
        private let counts = Mutex<[String: Int]>([:])
        let listFails = Mutex(false)

        init(_ inner: FakeFeedTransport) { self.inner = inner }

        func fetch(_ request: FeedRequest) async throws -> FeedResponse {
            let path = request.path.split(separator: "?").first.map(String.init) ?? request.path
            counts.withLock { $0[path, default: 0] += 1 }
            if path == "/live-matches", listFails.withLock({ $0 }) {
                return FeedResponse(status: 503, body: Data(#"{"error": "down"}"#.utf8))
            }
            return try await inner.fetch(request)
        }

        func requests(_ path: String) -> Int { counts.withLock { $0[path] ?? 0 } }
    }

    struct Running {
        let broker: Broker
        let transport: SwitchableTransport
        let services: RunningServices

        func stop() async throws { try await services.stop() }

        var polls: Int { transport.requests("/matches/football") }
        func polls(_ matchId: String) -> Int { transport.requests("/matches/" + matchId) }
        /// The `seq` of the match's latest state in the broker.
        func seq() async -> Int { await broker.service.lifecycle.latest(matchId: "football")?.rendered.snapshot.seq ?? -1 }
    }

    static let interval = Duration.milliseconds(100)

    enum StoreKind: String, CaseIterable, CustomTestStringConvertible {
        case memory, sqlite
        var testDescription: String { rawValue }

        func make() throws -> any MatchcastStore {
            switch self {
            case .memory: InMemoryStore()
            case .sqlite: try SQLiteStore(path: try ScratchFolder.newFolder("list-serves").appendingPathComponent("m.sqlite").path)
            }
        }
    }

    /// A broker polling the fake feed at 60×, started three real seconds ago: football has kicked off and changes
    /// about every real second. One device follows football.
    static func start(_ store: StoreKind, listServesMatches: Bool) async throws -> Running {
        let running = try await start(store: try store.make(), listServesMatches: listServesMatches)
        let device = try await running.broker.service.registerDevice()
        _ = try await running.broker.service.follow(deviceId: device.deviceId, matchId: "football")
        return running
    }

    /// The same on `store`, following nothing; on PostgreSQL one replica named `replicaId`, with leases of a minute.
    static func start(store: any MatchcastStore, listServesMatches: Bool, replicaId: String = "solo") async throws -> Running {
        let clock = EventLoopClock()
        let feed = try FakeFeed(seed: 1, speed: 60, scenarios: ["football", "basketball"])
        let transport = SwitchableTransport(FakeFeedTransport(feed: feed, clock: clock, start: clock.now.advanced(by: .seconds(-3))))
        let broker = Broker(
            store: store, transport: transport, sinks: [CapturingSink()],
            settings: BrokerSettings(activityPolicy: ActivityPolicy(), seed: 1),
            timing: PollTimingPolicy(defaultInterval: interval, minInterval: interval, maxInterval: interval, jitter: 0),
            listServesMatches: listServesMatches, clock: clock, now: { Date() }, replicaId: replicaId, leaseTTL: .seconds(60),
            logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        return Running(broker: broker, transport: transport, services: RunningServices(broker.services))
    }

    /// Waits until `condition` holds, checked every 10 ms, up to `limit` (a bound for a loaded machine, not a measure).
    static func wait(_ what: String, limit: Duration = .seconds(60), until condition: () async -> Bool) async throws {
        let begin = ContinuousClock.now
        while !(await condition()) {
            try #require(begin.duration(to: .now) < limit, "\(what) not reached within \(limit)")
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test("the list serves a followed match it shows: no polls of its own while the list answers, the match still moves on",
          .timeLimit(.minutes(2)), arguments: StoreKind.allCases)
    func listServesTheMatch(_ store: StoreKind) async throws {
        let running = try await Self.start(store, listServesMatches: true)
        let list = { running.transport.requests("/live-matches") }
        try await Self.wait("the match's first poll and a state") {
            let seq = await running.seq()
            return running.polls >= 1 && seq >= 0
        }
        // Counted as they start: once the third list request since has started, the list has answered at least once
        // since the match's first poll, and serves it. (Conditions, not durations: a loaded machine polls slower.)
        let first = list()
        try await Self.wait("the list answered since") { list() >= first + 3 }
        let (polls, seq, lists) = (running.polls, await running.seq(), list())
        try await Self.wait("the match moves on through the list") { (await running.seq()) > seq }
        try await Self.wait("the list polled five times more") { list() >= lists + 5 }
        // At most one own poll that looked just before the list served it.
        #expect(running.polls - polls <= 1, "polled \(running.polls - polls) times on its own while the list served it")

        // The list fails: the match is polled on its own again at its next look, and goes on moving.
        running.transport.listFails.withLock { $0 = true }
        let served = running.polls
        try await Self.wait("own polls again with the list down") { running.polls >= served + 3 }
        let whileDown = await running.seq()
        try await Self.wait("the match moves on through its own polls") { (await running.seq()) > whileDown }

        // The list answers again (at its next poll, after its backoff): the match leaves its own polls once more.
        running.transport.listFails.withLock { $0 = false }
        let failedLists = list()
        try await Self.wait("the list answered again") { list() >= failedLists + 2 }
        let (back, listsBack) = (running.polls, list())
        try await Self.wait("the list polled five times more") { list() >= listsBack + 5 }
        #expect(running.polls - back <= 1, "polled \(running.polls - back) times on its own once the list answered again")
        try await running.stop()
    }

    @Test("off (the default), a followed match is polled on its own although the list shows it", .timeLimit(.minutes(2)))
    func offByDefault() async throws {
        let running = try await Self.start(.memory, listServesMatches: false)
        try await Self.wait("the match's first poll") { running.polls >= 1 }
        let polls = running.polls
        try await Self.wait("polls of its own go on") { running.polls >= polls + 5 }
        try await running.stop()
    }

    @Test("across two replicas: the list serves only the matches of the replica that polls it; the other's are polled on their own",
          .enabled(if: ScratchPostgresDatabase.isConfigured, ScratchPostgresDatabase.skipMessage), .timeLimit(.minutes(2)))
    func acrossReplicas() async throws {
        try await ReplicaRoutingTests.withStore { store in
            let a = try await Self.start(store: store, listServesMatches: true, replicaId: "a")
            let b = try await Self.start(store: store, listServesMatches: true, replicaId: "b")
            let replicas = [a, b]
            func holds(_ running: Running, _ id: String) -> Bool { running.broker.service.lifecycle.ownership.holds(id) }
            try await Self.wait("a replica polls the live list") { replicas.contains { holds($0, ReplicaCoordinator.liveListLease) } }
            let listHolder = try #require(replicas.first { holds($0, ReplicaCoordinator.liveListLease) })
            let other = try #require(replicas.first { $0.broker.service !== listHolder.broker.service })

            // A match followed through each replica: the one that gets the call usually claims it, so each runs one.
            for (replica, matchId) in [(listHolder, "football"), (other, "basketball")] {
                let device = try await replica.broker.service.registerDevice()
                _ = try await replica.broker.service.follow(deviceId: device.deviceId, matchId: matchId)
            }
            var owners: [String: Running] = [:]
            try await Self.wait("both matches run and polled") {
                for id in ["football", "basketball"] { owners[id] = replicas.first { holds($0, id) && $0.polls(id) > 0 } }
                return owners.count == 2
            }
            // The list answered a few times since (its first answers take a while: every match it shows is saved).
            let lists = listHolder.transport.requests("/live-matches")
            try await Self.wait("the list answered since") { listHolder.transport.requests("/live-matches") >= lists + 3 }
            let before = Dictionary(uniqueKeysWithValues: owners.map { ($0.key, $0.value.polls($0.key)) })
            let listed = listHolder.transport.requests("/live-matches")
            for (id, owner) in owners where owner.broker.service !== listHolder.broker.service {
                try await Self.wait("\(id), run by the replica not polling the list, polled on its own") {
                    owner.polls(id) >= (before[id] ?? 0) + 5
                }
            }
            try await Self.wait("the list polled five times more") { listHolder.transport.requests("/live-matches") >= listed + 5 }
            for (id, owner) in owners where owner.broker.service === listHolder.broker.service {
                let polled = owner.polls(id) - (before[id] ?? 0)
                #expect(polled <= 1, "\(id), run by the replica polling the list, was polled \(polled) times on its own")
            }
            #expect(other.transport.requests("/live-matches") == 0, "only the holder of its lease polls the list")
            let runs = owners.sorted { $0.key < $1.key }.map { "\($0.key) on \($0.value.broker.service === listHolder.broker.service ? "the list's replica" : "the other")" }
            print("list-serves-replicas: \(runs.joined(separator: ", "))")
            try await a.stop()
            try await b.stop()
        }
    }
}
