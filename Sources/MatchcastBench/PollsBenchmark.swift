import AsyncHTTPClient
import Foundation
import MatchcastCLI
import MatchcastService
import MatchcastTesting
import Synchronization

/// The cost of a poll, measured through `matchcast serve` as users run it: a child process on one store, M live
/// matches on a feed in this process (`PollsFeed`, every answer unchanged, each asking to be polled every
/// `pollMs`), each match followed by one device through the HTTP API. After a warm-up, one window of `seconds` with
/// nothing but the polls: the polls the feed answered and serve's CPU time. Then a window of `probeSeconds` in which
/// devices of their own (no push-to-start token, so nothing is delivered for them) follow and unfollow while the
/// polls go on: the calls' latency, and serve's CPU per poll with those calls' own cost in it. serve's resident memory
/// is read before the follows and after both windows.
///
/// Changing (`changing`): each follower's activity is started and gets its update token, serve coalesces nothing,
/// and from the warm-up on every poll is a change (the match a minute later) sent to the match's one follower: the
/// cost of a changed poll, from its request to its delivery on serve's stdout.
///
/// Listed (`listed`): the feed's live list carries every match whole and serve lets it serve them
/// (`polling.liveListServesMatches`): one list request a `pollMs` keeps every match fresh (changing: moves every match on).
struct PollsBenchmark: Sendable {
    struct Options: Sendable {
        var matches = 2_000
        /// The feed's `retryAfterMs` and serve's `polling.minPollMs`.
        var pollMs = 1_000
        var seconds = 60
        var warmup = 10
        /// Concurrent API clients for the setup.
        var clients = 8
        /// Follow + unfollow pairs per second during the probe window (each pair on a match of the M).
        var probesPerSecond = 10
        /// The window after the polls' own, in which the probes run (0: none).
        var probeSeconds = 20
        var executable: String
        var store: BenchStoreKind
        var postgresServer: String?
        var serveLogLevel = "warning"
        var phaseTimeout: Duration = .seconds(300)
        var verbose = true
        var interrupted: @Sendable () -> Bool = { false }
        /// Every poll a change, delivered to the match's follower (above).
        var changing = false
        /// The live list carries the matches and serves them (above).
        var listed = false
    }

    struct Result: Sendable {
        var store: BenchStoreKind
        var matches: Int
        var changing = false
        var listed = false
        var window: Duration
        var setup: Duration
        /// Match polls the feed answered in the window, and how many of them were 304s.
        var polls = 0
        var notModified = 0
        /// Other feed requests in the window (the live list).
        var otherRequests = 0
        /// serve's CPU over the window, in which nothing but the polls ran.
        var serveCPU: Duration?
        /// The probe window: the match polls answered in it and serve's CPU over it (the probes' calls included).
        var probePolls = 0
        var probeCPU: Duration?
        /// serve's resident memory before the follows and at the end of both windows.
        var rssBefore = 0
        var rssAfter = 0
        /// The same, anonymous memory only (`ResidentMemory.anonymous`).
        var anonymousBefore = 0
        var anonymousAfter = 0
        var follow = LatencySample()
        var unfollow = LatencySample()
        /// Deliveries serve wrote in the window (none are due when every answer is unchanged; one per poll when changing).
        var deliveries = 0
        /// On PostgreSQL: the WAL the server wrote over the window (its leases' renewals, when nothing changes).
        var walBytes: Int64?
        var serveExit = ""

        var pollsPerSecond: Double { Double(polls) / max(window.seconds, 1e-9) }
        var walBytesPerSecond: Double? { walBytes.map { Double($0) / max(window.seconds, 1e-9) } }
        /// serve's CPU over the window, as a share of one core.
        var coreShare: Double? { serveCPU.map { $0.seconds / max(window.seconds, 1e-9) } }
        var cpuPerPoll: Duration? { serveCPU.map { polls > 0 ? $0 / polls : .zero } }
        /// serve's CPU per poll while the probes ran: the poll's cost and the API calls' together.
        var cpuPerPollWithProbes: Duration? { probeCPU.map { probePolls > 0 ? $0 / probePolls : .zero } }
        /// serve's CPU per match and second of the window: comparable whether a match is polled on its own or served by the list.
        var cpuPerMatchSecond: Duration? { serveCPU.map { $0 / max(window.seconds * Double(matches), 1e-9) } }
        var rssPerMatch: Double { Double(max(0, rssAfter - rssBefore)) / Double(max(matches, 1)) }
        /// Without the code pages first run after `rssBefore` (what the SQL stores' code adds at the first follows).
        var anonymousPerMatch: Double { Double(max(0, anonymousAfter - anonymousBefore)) / Double(max(matches, 1)) }
    }

    let options: Options

    func run() async throws -> Result {
        let settings = ServeSession<PollsFeed>.Settings(
            what: "polls", store: options.store, postgresServer: options.postgresServer, executable: options.executable,
            serveLogLevel: options.serveLogLevel, pollMs: options.pollMs, clients: options.clients,
            interrupted: options.interrupted,
            environment: (options.changing ? ["MATCHCAST_ACTIVITIES_COALESCE_SECONDS": "0"] : [:])
                .merging(options.listed ? ["MATCHCAST_POLLING_LIVE_LIST_SERVES_MATCHES": "true"] : [:]) { $1 })
        var (result, exit) = try await ServeSession.run(settings, feed: {
            try await PollsFeed.start(
                matches: options.matches, retryAfterMs: options.pollMs, changing: options.changing, listed: options.listed)
        }) { session in
            try await measure(api: session.api, feed: session.feed, child: session.child, postgres: session.store.scratch)
        }
        result.serveExit = exit
        return result
    }

    private func say(_ line: String) {
        if options.verbose { StandardStreams.err("polls bench (\(options.store.rawValue)): \(line)") }
    }

    private func measure(api: DeviceAPI, feed: PollsFeed, child: ServeChild, postgres: ScratchPostgresDatabase?) async throws -> Result {
        let deadline = ContinuousClock.now + options.phaseTimeout
        while (try? await api.isHealthy()) != true {
            try check(child, "serve answers /healthz", deadline: deadline)
            try await Task.sleep(for: .milliseconds(20))
        }
        let m = options.matches
        var result = Result(
            store: options.store, matches: m, changing: options.changing, listed: options.listed, window: .seconds(options.seconds),
            setup: .zero)
        let resident = ResidentMemory.of(pid: child.pid)
        result.rssBefore = resident.current
        result.anonymousBefore = resident.anonymous

        // Setup: one device per match, with a push-to-start token, following it (the match is live: one start each).
        let setupBegin = ContinuousClock.now
        let devices = DeviceTable(count: m)
        try await api.parallel(m, clients: options.clients) { index in
            let device = try await api.registerDevice()
            try await api.putPushToStartToken(device, token: ServeBenchmark.Run.token(.pushToStart, index))
            try await api.follow(device, matchId: PollsFeed.matchId(index))
            devices.set(index, device)
        }
        // Every activity started (the match is live) before the window opens, so none of the starts lands in it.
        let waits = ServeWaits(child: child, sinkChild: nil, phaseTimeout: options.phaseTimeout, interrupted: options.interrupted)
        var starts = ServeBenchmark.Tally(event: .start, devices: m, cursor: 0)
        try await waits.collect(&starts, what: "\(m) starts")
        if options.changing {
            // Each activity's update token reported, as the app would.
            let activityIds = starts.activityIds
            try await api.parallel(m, clients: options.clients) { index in
                guard let activityId = activityIds[index] else { throw CommandFailure("device \(index) has no started activity") }
                try await api.putActivity(
                    devices.get(index), activityId: activityId, matchId: PollsFeed.matchId(index),
                    updateToken: ServeBenchmark.Run.token(.update, index))
            }
            feed.startChanging()
        }
        result.setup = .now - setupBegin
        say(String(format: "%d devices follow %d matches%@: %.1f s", m, m, options.changing ? " (started, tokened)" : "", result.setup.seconds))
        let probes = DeviceTable(count: 4)
        for index in 0..<4 { probes.set(index, try await api.registerDevice()) }

        // Warm-up: every match polled at least once, then `warmup` seconds more. Listed, a match is polled on its own
        // once, when its first follower arrives (in the setup), and then left to the list.
        let pollsBefore = options.listed ? 0 : feed.count.matchPolls
        while feed.count.matchPolls - pollsBefore < m {
            try check(child, "a poll of each match", deadline: deadline)
            try await Task.sleep(for: .milliseconds(100))
        }
        try await sleep(.seconds(options.warmup), child, "the warm-up")

        // The window: the polls alone.
        let walBefore = try await postgres?.walPosition()
        let before = feed.count
        let cpuBefore = child.cpuTime()
        let deliveriesBefore = child.tap.count
        let windowStart = ContinuousClock.now
        try await sleep(.seconds(options.seconds), child, "the window")
        let after = feed.count
        result.serveCPU = PollsBenchmark.difference(child.cpuTime(), cpuBefore)
        result.window = .now - windowStart
        // Read after the window's other figures, which its query's connection would otherwise stretch.
        if let walBefore, let walAfter = try await postgres?.walPosition() { result.walBytes = walAfter - walBefore }
        result.polls = after.matchPolls - before.matchPolls
        result.notModified = after.notModified - before.notModified
        result.otherRequests = after.other - before.other
        result.deliveries = child.tap.count - deliveriesBefore

        // The probe window: follows and unfollows while the polls go on.
        if options.probeSeconds > 0 {
            let cpuBefore = child.cpuTime()
            let probeStart = ContinuousClock.now
            let windowEnd = probeStart + .seconds(options.probeSeconds)
            let interval = Duration.seconds(1) / max(options.probesPerSecond, 1)
            var next = probeStart
            var probe = 0
            while ContinuousClock.now < windowEnd {
                try check(child, "the probe window", deadline: windowEnd + options.phaseTimeout)
                let device = try probes.get(probe % 4)
                let matchId = PollsFeed.matchId((probe &* 7919) % m)
                probe += 1
                var begin = ContinuousClock.now
                try await api.follow(device, matchId: matchId)
                result.follow.add(.now - begin)
                begin = .now
                try await api.unfollow(device, matchId: matchId)
                result.unfollow.add(.now - begin)
                next += interval
                if next > .now { try await Task.sleep(until: next) }
            }
            result.probeCPU = PollsBenchmark.difference(child.cpuTime(), cpuBefore)
            result.probePolls = feed.count.matchPolls - after.matchPolls
        }
        let residentAfter = ResidentMemory.of(pid: child.pid)
        result.rssAfter = residentAfter.current
        result.anonymousAfter = residentAfter.anonymous
        return result
    }

    private func sleep(_ duration: Duration, _ child: ServeChild, _ what: String) async throws {
        let end = ContinuousClock.now + duration
        while ContinuousClock.now < end {
            try check(child, what, deadline: end + options.phaseTimeout)
            try await Task.sleep(for: .milliseconds(200))
        }
    }

    private func check(_ child: ServeChild, _ what: String, deadline: ContinuousClock.Instant) throws {
        if options.interrupted() { throw CommandFailure("interrupted while waiting for \(what)") }
        if !child.isRunning { throw CommandFailure("serve exited while waiting for \(what)") }
        if ContinuousClock.now >= deadline { throw CommandFailure("timed out after \(options.phaseTimeout) waiting for \(what)") }
    }

    static func difference(_ after: Duration?, _ before: Duration?) -> Duration? {
        guard let after, let before else { return nil }
        return after - before
    }
}

/// Latencies of one kind of API call, for percentiles.
struct LatencySample: Sendable {
    private(set) var values: [Duration] = []

    mutating func add(_ value: Duration) { values.append(value) }

    var count: Int { values.count }

    /// The `p`-th percentile (0...100), nearest rank; nil when empty.
    func percentile(_ p: Double) -> Duration? {
        values.isEmpty ? nil : Self.nearestRank(values.sorted(), p / 100)
    }

    /// The smallest of `sorted` with at least `fraction` of them at or below it (`sorted` not empty).
    static func nearestRank(_ sorted: [Duration], _ fraction: Double) -> Duration {
        let rank = Int((Double(sorted.count) * fraction).rounded(.up))
        return sorted[min(max(rank, 1), sorted.count) - 1]
    }
}
