import ArgumentParser
import Foundation
import MatchcastCLI

/// `matchcast-bench polls`: the cost of a poll, through `matchcast serve` as users run it.
struct PollsBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "polls",
        abstract: "Measure what polling M live matches costs a `matchcast serve` child process.",
        discussion: """
            Starts `matchcast serve` (the `matchcast` beside this executable, or --executable) on each chosen store in \
            turn, pointed at a feed this process serves on 127.0.0.1: --matches live football matches in the native v1 \
            format, each answer unchanged for the whole run (304 to a request with its ETag) and asking to be polled \
            every --poll-ms (serve's polling.minPollMs is set to the same). The live list is empty, so each match is \
            polled on its own (with --changing, every answer after the setup is a change instead: the match a minute later; \
            each activity has its update token and serve coalesces nothing, so each poll is one delivery). With --listed, \
            the live list carries every match and serve lets it serve them (polling.liveListServesMatches): each match is \
            polled once on its own, then kept fresh by one list request every --poll-ms (changing: each list answer moves \
            every match on). Through the \
            HTTP API, with --clients keep-alive clients, one device per match registers, \
            sets a push-to-start token and follows it (one start each, before the window).

            After every match has been polled once and --warmup seconds more, one window of --seconds with nothing but \
            the polls: the match polls the feed answered (polls/s, share of 304s) and serve's CPU time \
            (/proc/<pid>/stat: user + system, 10 ms ticks) as a share of one core and per poll; on PostgreSQL, the WAL \
            the server wrote in it (WAL KB/s, pg_current_wal_lsn: every database of the server, so nothing else should \
            write to it; with nothing changing, what the leases' renewals write). Then a window of \
            --probe-seconds in which devices without a token (so nothing is delivered for them) follow and unfollow \
            (--probes pairs per second) while the polls go on: the calls' latency, and serve's CPU per poll with the \
            calls' own cost in it. serve's resident memory is read before the follows and after both windows (and the \
            difference per followed match). \
            With several --matches (a comma list), each store runs at each count, and a line per store gives what a \
            poll and a match cost between the fewest and the most: serve's CPU per added poll, its CPU a second \
            besides the polls, and resident memory per added match. The table goes to stderr. See docs/performance.md.

            Examples:
              swift build -c release
              .build/release/matchcast-bench polls --store sqlite --matches 2000
              .build/release/matchcast-bench polls --store all --matches 1000,10000 --seconds 30
              .build/release/matchcast-bench polls --store sqlite --matches 1000 --changing
              .build/release/matchcast-bench polls --store sqlite --matches 2000 --listed
              .build/release/matchcast-bench polls --store all --matches 2000 --postgres-url postgres://postgres@127.0.0.1:5432/postgres
            """
    )

    @OptionGroup var child: ServeChildOptions

    // A transform rather than ExpressibleByArgument, so that a bad value's message says what is wrong; the help
    // then names the default itself.
    @Option(
        help: """
            Live matches, each followed by one device; a comma list (1000,10000) runs each store at each count. \
            (default: \(Self.defaultMatches))
            """,
        transform: MatchCounts.parse)
    var matches = Self.defaultMatches
    static let defaultMatches = MatchCounts([2_000])

    @Option(help: "How often each match asks to be polled, in ms (the feed's retryAfterMs and serve's polling.minPollMs).")
    var pollMs = 1_000

    @Option(help: "The measured window, in seconds.")
    var seconds = 60

    @Option(help: "Seconds of polling before the window, after every match was polled once.")
    var warmup = 10

    @Option(help: "Follow + unfollow pairs per second during the probe window.")
    var probes = 10

    @Option(help: "The window after the polls' own, in which the probes run, in seconds (0: no probes).")
    var probeSeconds = 20

    @Flag(help: "Every poll a change (the match a minute later), sent to the match's follower: the cost of a changed poll.")
    var changing = false

    @Flag(help: "The live list carries every match and serve lets it serve them (polling.liveListServesMatches).")
    var listed = false

    func validate() throws {
        guard (100...60_000).contains(pollMs) else { throw ValidationError("--poll-ms must be 100...60000") }
        guard (1...3600).contains(seconds) else { throw ValidationError("--seconds must be 1...3600") }
        guard (0...600).contains(warmup) else { throw ValidationError("--warmup must be 0...600") }
        guard (1...100).contains(probes) else { throw ValidationError("--probes must be 1...100") }
        guard (0...3600).contains(probeSeconds) else { throw ValidationError("--probe-seconds must be 0...3600") }
    }

    func run() async throws {
        let postgresServer = try child.postgresServer(for: "polls")
        let signals = SignalFlag.install()
        defer { signals.uninstall() }
        StandardStreams.err("load average (1, 5, 15 min) at the start: \(BenchTable.loadAverage)")
        var results: [PollsBenchmark.Result] = []
        let runs = child.store.kinds.flatMap { kind in matches.values.map { (kind, $0) } }
        for (kind, count) in runs {
            let benchmark = PollsBenchmark(options: PollsBenchmark.Options(
                matches: count, pollMs: pollMs, seconds: seconds, warmup: warmup, clients: child.clients, probesPerSecond: probes,
                probeSeconds: probeSeconds,
                executable: child.matchcast, store: kind, postgresServer: postgresServer,
                serveLogLevel: child.serveLogLevel, phaseTimeout: .seconds(child.timeout), interrupted: { signals.isSet },
                changing: changing, listed: listed))
            do {
                results.append(try await benchmark.run())
            } catch {
                StandardStreams.err("matchcast-bench polls: store \(kind.rawValue), \(count) matches: \(error)")
                if !results.isEmpty { PollsBenchTable.print(results, pollMs: pollMs) }
                throw ExitCode(signals.isSet ? 130 : 1)
            }
        }
        PollsBenchTable.print(results, pollMs: pollMs)
        StandardStreams.err("load average (1, 5, 15 min) at the end: \(BenchTable.loadAverage) on \(ProcessInfo.processInfo.activeProcessorCount) cores")
    }
}

/// The results of `matchcast-bench polls`, on stderr.
enum PollsBenchTable {
    static func print(_ results: [PollsBenchmark.Result], pollMs: Int) {
        let header = [
            "store", "matches", "polls/s", "304 %", "serve CPU % core", "CPU µs/poll", "CPU µs/match·s", "… with API µs/poll",
            "RSS MB before", "RSS MB after",
            "RSS KB/match", "anon KB/match", "follow p50/p99 ms", "unfollow p50/p99 ms", "deliveries", "WAL KB/s", "setup s",
        ]
        var lines = [header]
        for result in results {
            lines.append([
                result.store.rawValue, "\(result.matches)",
                String(format: "%.0f", result.pollsPerSecond),
                String(format: "%.1f", 100 * Double(result.notModified) / Double(max(result.polls, 1))),
                result.coreShare.map { String(format: "%.1f", 100 * $0) } ?? "?",
                result.cpuPerPoll.map { String(format: "%.0f", $0.seconds * 1_000_000) } ?? "?",
                result.cpuPerMatchSecond.map { String(format: "%.0f", $0.seconds * 1_000_000) } ?? "?",
                result.cpuPerPollWithProbes.map { String(format: "%.0f", $0.seconds * 1_000_000) } ?? "-",
                String(format: "%.0f", Double(result.rssBefore) / 1_048_576),
                String(format: "%.0f", Double(result.rssAfter) / 1_048_576),
                String(format: "%.1f", result.rssPerMatch / 1024),
                String(format: "%.1f", result.anonymousPerMatch / 1024),
                latencies(result.follow), latencies(result.unfollow),
                "\(result.deliveries)", result.walBytesPerSecond.map { String(format: "%.0f", $0 / 1024) } ?? "-",
                String(format: "%.1f", result.setup.seconds),
            ])
        }
        StandardStreams.err("")
        let changing = results.contains(where: \.changing)
        let listed = results.contains(where: \.listed)
        StandardStreams.err(
            "each match asks to be polled every \(pollMs) ms; the window's polls are match polls answered by the feed, with no "
                + "API call beside them (… with API: serve's CPU per poll in the probe window, the follows' and unfollows' own included)"
                + (listed ? "; the live list carries every match and serves them" : "")
                + (changing ? "; every \(listed ? "answer" : "one") a change, delivered to the match's follower" : ""))
        BenchTable.printAligned(lines, textColumns: 1)
        let marginals = PollsMarginal.of(results)
        guard !marginals.isEmpty else { return }
        StandardStreams.err("")
        StandardStreams.err("between the fewest and the most matches (what serve spends anyway left out; docs/performance.md):")
        for marginal in marginals { StandardStreams.err("  " + marginal.line) }
    }

    private static func latencies(_ sample: LatencySample) -> String {
        guard let p50 = sample.percentile(50), let p99 = sample.percentile(99) else { return "-" }
        return String(format: "%.1f/%.1f", p50.seconds * 1000, p99.seconds * 1000)
    }
}
