import ArgumentParser
import Foundation
import MatchcastCLI

/// `matchcast-bench api-latency`: what one device API call waits for, through `matchcast serve` as users run it.
struct APILatencyBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "api-latency",
        abstract: "Measure what one device API call waits for: one keep-alive client against a `matchcast serve` child.",
        discussion: """
            Starts `matchcast serve` (the `matchcast` beside this executable, or --executable) on each chosen store in \
            turn, pointed at a feed this process serves with one live football match, unchanged (304s), polled every \
            second. One device follows it throughout, so that serve polls it; once serve knows it, one keep-alive \
            client and nothing else: each of --devices devices registers, sets a push-to-start token, follows the match \
            (its activity starts at once: a push-to-start delivery) and unfollows it (the activity ends), each call \
            awaited before the next. Each call's p50, p90 and p99, the first --warmup devices left out (connections and \
            caches warming up): what a call waits for, its round trips to the store above all, not throughput \
            (`matchcast-bench serve` measures that, with --clients clients). The table goes to stderr. See \
            docs/performance.md.

            Examples:
              swift build -c release
              .build/release/matchcast-bench api-latency --store all --devices 300
              .build/release/matchcast-bench api-latency --store postgres --executable /tmp/matchcast-before
            """
    )

    @OptionGroup var child: ServeChildOptions

    @Option(help: "Devices, each making each call once.")
    var devices = 300

    @Option(help: "Devices at the start left out of the percentiles.")
    var warmup = 5

    func validate() throws {
        guard (1...100_000).contains(devices) else { throw ValidationError("--devices must be 1...100000") }
        guard (0..<devices).contains(warmup) else { throw ValidationError("--warmup must be 0...devices-1") }
    }

    /// The calls, in the order each device makes them.
    static let calls = ["register", "push-to-start token", "follow", "unfollow"]

    func run() async throws {
        let postgresServer = try child.postgresServer(for: "api-latency")
        let signals = SignalFlag.install()
        defer { signals.uninstall() }
        StandardStreams.err("load average (1, 5, 15 min) at the start: \(BenchTable.loadAverage)")
        var results: [(store: BenchStoreKind, samples: [LatencySample])] = []
        for kind in child.store.kinds {
            let settings = ServeSession<PollsFeed>.Settings(
                what: "api-latency", store: kind, postgresServer: postgresServer, executable: child.matchcast,
                serveLogLevel: child.serveLogLevel, pollMs: 1_000, clients: 1, interrupted: { signals.isSet })
            do {
                let (samples, _) = try await ServeSession.run(settings, feed: { try await PollsFeed.start(matches: 1, retryAfterMs: 1_000) }) {
                    try await measure($0, interrupted: { signals.isSet })
                }
                results.append((kind, samples))
            } catch {
                StandardStreams.err("matchcast-bench api-latency: store \(kind.rawValue): \(error)")
                if !results.isEmpty { Self.print(results) }
                throw ExitCode(signals.isSet ? 130 : 1)
            }
        }
        Self.print(results)
        StandardStreams.err("load average (1, 5, 15 min) at the end: \(BenchTable.loadAverage) on \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }

    /// The calls' latencies, one sample per call in `calls`' order.
    private func measure(_ session: ServeSession<PollsFeed>, interrupted: @escaping @Sendable () -> Bool) async throws -> [LatencySample] {
        let api = session.api
        let waits = ServeWaits(child: session.child, sinkChild: nil, phaseTimeout: .seconds(child.timeout), interrupted: interrupted)
        let matchId = PollsFeed.matchId(0)
        try await waits.until("serve answers /healthz") { try await api.isHealthy() }
        let anchor = try await api.registerDevice()
        try await api.follow(anchor, matchId: matchId)
        try await waits.until("serve knows the match") { try await api.matchIsKnown(anchor, matchId: matchId) }

        var samples = Array(repeating: LatencySample(), count: Self.calls.count)
        for index in 0..<devices {
            if interrupted() { throw CommandFailure("interrupted") }
            let kept = index >= warmup
            var began = ContinuousClock.now
            func lap(_ call: Int) {
                let now = ContinuousClock.now
                if kept { samples[call].add(now - began) }
                began = now
            }
            let device = try await api.registerDevice()
            lap(0)
            try await api.putPushToStartToken(device, token: ServeBenchmark.Run.token(.pushToStart, index))
            lap(1)
            try await api.follow(device, matchId: matchId)
            lap(2)
            try await api.unfollow(device, matchId: matchId)
            lap(3)
        }
        return samples
    }

    private static func print(_ results: [(store: BenchStoreKind, samples: [LatencySample])]) {
        var lines = [["store", "call", "calls", "p50 ms", "p90 ms", "p99 ms"]]
        for (store, samples) in results {
            for (call, sample) in zip(calls, samples) {
                let ms = { (p: Double) in sample.percentile(p).map { String(format: "%.2f", $0.seconds * 1000) } ?? "-" }
                lines.append([store.rawValue, call, "\(sample.count)", ms(50), ms(90), ms(99)])
            }
        }
        StandardStreams.err("one keep-alive client, each call awaited before the next; a follow starts its activity, an unfollow ends it")
        BenchTable.printAligned(lines, textColumns: 2)
    }
}
