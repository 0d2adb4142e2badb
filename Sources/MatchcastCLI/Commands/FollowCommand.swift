import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import ServiceLifecycle

/// `matchcast follow <match> --feed <feed>`: the pushes one device would get, as the match goes on.
struct FollowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Follow one match and print the Live Activity pushes a device would get.",
        discussion: """
            Polls the match at the interval the feed asks for and prints one Delivery per line (NDJSON, \
            CONTRACTS §3): a `start`, then every change (key events at priority 10 with an alert, routine \
            changes at priority 5), then an `end` when the match is final, and exits 0. A feed that cannot \
            be reached is retried with backoff and reported on stderr. Ctrl-C stops cleanly.

            FEED is a native v1 base URL (http://host:port), `fake[?speed=N&seed=S]` for the built-in fake \
            feed (matches: cricket-t20, tennis-bo3, football), `mlb` for the MLB Stats API (the match id is \
            the gamePk) or `mlb:BASE` to point it elsewhere.

            Examples:
              matchcast follow cricket-t20 --feed "fake?speed=600"
              matchcast follow tennis-bo3 --feed http://127.0.0.1:8090 --pretty
              matchcast follow 744914 --feed mlb
            """
    )

    @Argument(help: "The match id, as the feed names it.")
    var matchId: String

    @Option(help: "The feed: a base URL, fake[?speed=N&seed=S], mlb or mlb:BASE.")
    var feed: String = "fake"

    @Flag(help: "One readable line per change instead of NDJSON.")
    var pretty = false

    @Option(help: "The app's bundle id; the APNs topic is <bundle id>.push-type.liveactivity.")
    var bundleId = "com.example.matchcast"

    @Option(help: "Send routine (priority 5) changes at most once per this many seconds.")
    var coalesce: Double = 0

    @Option(help: "Never poll more often than this many milliseconds (default 2000; 20 for the fake feed).")
    var minPollMs: Int?

    @Option(help: "Never wait longer than this many milliseconds between polls.")
    var maxPollMs: Int = 300_000

    @Option(help: "Seed for activity and delivery ids (same seed, same ids).")
    var seed: UInt64 = 1

    func validate() throws {
        guard !matchId.isEmpty, matchId.utf8.count <= 128 else {
            throw ValidationError("the match id must be 1 to 128 bytes")
        }
        guard coalesce >= 0, coalesce.isFinite else { throw ValidationError("--coalesce must be ≥ 0") }
        if let minPollMs, minPollMs < 1 { throw ValidationError("--min-poll-ms must be ≥ 1") }
        guard maxPollMs >= 1 else { throw ValidationError("--max-poll-ms must be ≥ 1") }
    }

    func run() async throws {
        let spec: FeedSpec
        do {
            spec = try FeedSpec(parsing: feed)
        } catch {
            throw ValidationError(error.description)
        }
        let client = spec.needsHTTPClient ? HTTPClient(eventLoopGroupProvider: .singleton) : nil
        do {
            try await follow(spec: spec, client: client)
        } catch {
            try? await client?.shutdown()
            throw error
        }
        try await client?.shutdown()
    }

    private func follow(spec: FeedSpec, client: HTTPClient?) async throws {
        let clock = ContinuousClock()
        let transport: any FeedTransport
        do {
            transport = try spec.makeTransport(client: client, clock: clock)
        } catch {
            throw ValidationError(error.description)
        }
        let isFake = if case .fake = spec { true } else { false }
        let minPoll = Duration.milliseconds(minPollMs ?? (isFake ? 20 : 2000))
        let timing = PollTimingPolicy(
            defaultInterval: max(minPoll, .seconds(isFake ? 0 : 10)),
            minInterval: minPoll,
            maxInterval: .milliseconds(maxPollMs),
            backoffBase: isFake ? minPoll : .seconds(2),
            backoffCap: .seconds(60))
        let sink: any DeliverySink = pretty ? PrettySink() : StdoutSink()
        let session = FollowSession(
            matchId: matchId, sink: sink,
            policy: ActivityPolicy(coalesceInterval: .milliseconds(Int64(coalesce * 1000))),
            bundleId: bundleId, seed: seed,
            report: { StandardStreams.err("matchcast follow: " + $0) })
        let source = MatchSource(matchId: matchId, transport: transport, clock: clock, policy: timing)
        let poller = Poller(source: source, clock: clock) { result in
            do {
                try await session.handle(result)
            } catch {
                StandardStreams.err("matchcast follow: cannot write: \(error)")
            }
        }
        var logger = Logger(label: "matchcast.follow")
        logger.logLevel = .warning
        // The poller returning (the match is final) ends the whole group cleanly.
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: PollerService(run: { await poller.run() }), successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
        if await !session.isFinished {
            StandardStreams.err("matchcast follow: stopped before the match ended")
        }
    }
}

/// Runs a polling loop as a `Service` that stops on graceful shutdown (SIGINT, SIGTERM).
struct PollerService: Service {
    let run: @Sendable () async -> Void

    func run() async throws {
        try await cancelWhenGracefulShutdown { await run() }
    }
}
