import ArgumentParser
import Foundation
import MatchcastCLI

/// `matchcast-bench soak`: serve left running with followers and a looping recorded match, sampled as it goes.
struct SoakCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Run `matchcast serve` for a long time with N followers and a looping recorded match; sample it as it goes.",
        discussion: """
            Starts `matchcast serve` (as `bench serve` does) on each chosen store in turn. N devices register, set a \
            push-to-start token and follow one match through the HTTP API; the feed (served by this process) shows the \
            first in-play state of the match in --recording (a recording from `matchcast record` or `matchcast import`), \
            every activity starts, and each device registers its update token. Then, for --minutes, the feed shows the \
            recording's next in-play state every --step-seconds (in a loop, `seq` still growing, so the match never \
            ends), and every --sample-seconds the soak samples serve: resident memory, open files, CPU, \
            matchcast_outbox_deliveries, and how long each feed change took to reach serve's deliveries (read from its \
            stdout: each update is timed from the latest change shown before it arrived). At the end the feed shows the \
            final state and every activity must end (exit 1 otherwise).

            Each store's samples go to soak-<store>.csv and soak-<store>.svg (memory and latency over time) in --out, \
            the CSV written as the samples come. The figure: resident memory growth from the first sample after \
            --warmup-minutes to the last. Scripts/soak.sh runs it on a real recorded match. See docs/performance.md.

            Examples:
              swift build -c release
              .build/release/matchcast import cricsheet $MATCHCAST_REALDATA/cricsheet/1144530.json -o match.ndjson
              .build/release/matchcast-bench soak --recording match.ndjson --store sqlite --minutes 60 --out soak
              .build/release/matchcast-bench soak --recording match.ndjson --followers 500 --minutes 2 --sample-seconds 10
            """
    )

    @OptionGroup var child: ServeChildOptions

    @Option(help: "A recording (matchcast record or import) whose first match with in-play answers is played.")
    var recording: String

    @Option(help: "Devices, each following the match.")
    var followers = 10_000

    @Option(help: "How long the steady state lasts, in minutes (fractions allowed).")
    var minutes = 60.0

    @Option(help: "Seconds between samples.")
    var sampleSeconds = 60.0

    @Option(help: "Seconds between the feed's changes.")
    var stepSeconds = 15.0

    @Option(help: "Minutes of the steady state left out of the memory growth figure.")
    var warmupMinutes = 10.0

    @Option(help: "How often serve polls the feed, in ms (the feed's retryAfterMs and serve's polling.minPollMs).")
    var pollMs = 1000

    @Option(help: "The folder for soak-<store>.csv and soak-<store>.svg (created if missing).")
    var out = "."

    func validate() throws {
        guard (1...1_000_000).contains(followers) else { throw ValidationError("--followers must be 1...1000000") }
        guard minutes > 0, minutes <= 7 * 24 * 60 else { throw ValidationError("--minutes must be above 0 and at most a week") }
        guard sampleSeconds >= 1, sampleSeconds <= minutes * 60 else {
            throw ValidationError("--sample-seconds must be at least 1 and at most the soak's length")
        }
        guard stepSeconds >= 0.1 else { throw ValidationError("--step-seconds must be at least 0.1") }
        guard warmupMinutes >= 0, warmupMinutes < minutes else { throw ValidationError("--warmup-minutes must be 0 or more, under --minutes") }
        guard (10...60_000).contains(pollMs) else { throw ValidationError("--poll-ms must be 10...60000") }
    }

    func run() async throws {
        let postgresServer: String?
        let timeline: SoakTimeline
        do {
            postgresServer = try child.postgresServer()
            let data = try Data(contentsOf: URL(fileURLWithPath: recording))
            timeline = try SoakTimeline(recording: data, matchId: SoakBenchmark.matchId)
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        } catch {
            StandardStreams.err("matchcast-bench soak: \(error)")
            throw ExitCode(2)
        }
        let signals = SignalFlag.install()
        defer { signals.uninstall() }
        StandardStreams.err("load average (1, 5, 15 min) at the start: \(BenchTable.loadAverage)")
        var failed = false
        for kind in child.store.kinds {
            let folder = URL(fileURLWithPath: out)
            let csv = folder.appendingPathComponent("soak-\(kind.rawValue).csv")
            let svg = folder.appendingPathComponent("soak-\(kind.rawValue).svg")
            let writer = try SoakCSVWriter(url: csv)
            let benchmark = SoakBenchmark(options: SoakBenchmark.Options(
                followers: followers, duration: .milliseconds(Int64(minutes * 60_000)),
                sampleEvery: .milliseconds(Int64(sampleSeconds * 1000)), stepEvery: .milliseconds(Int64(stepSeconds * 1000)),
                pollMs: pollMs, clients: child.clients, executable: child.matchcast, store: kind, postgresServer: postgresServer,
                serveLogLevel: child.serveLogLevel, timeline: timeline, phaseTimeout: .seconds(child.timeout),
                interrupted: { signals.isSet }, onSample: { writer.append($0) }))
            let result: SoakBenchmark.Result
            do {
                result = try await benchmark.run()
            } catch {
                StandardStreams.err("matchcast-bench soak: store \(kind.rawValue): \(error)")
                throw ExitCode(signals.isSet ? 130 : 1)
            }
            let title = "matchcast serve on \(kind.rawValue), \(followers) followers, a change every "
                + String(format: "%g s", stepSeconds)
            try SoakReport.svg(result.samples, title: title).write(to: svg, atomically: true, encoding: .utf8)
            Self.summarize(result, warmUp: warmupMinutes * 60, csv: csv.path, svg: svg.path)
            failed = failed || !result.everyActivityEnded
        }
        StandardStreams.err("load average (1, 5, 15 min) at the end: \(BenchTable.loadAverage) on \(ProcessInfo.processInfo.activeProcessorCount) cores")
        if failed {
            StandardStreams.err("matchcast-bench soak: not every activity started once and ended once")
            throw ExitCode(1)
        }
    }

    static func summarize(_ result: SoakBenchmark.Result, warmUp: Double, csv: String, svg: String) {
        let mb = { (bytes: Int) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        var line = "\(result.store.rawValue): \(result.followers) followers, \(result.changes) changes, \(result.updates) updates; "
        if let growth = SoakReport.rssGrowth(result.samples, after: warmUp) {
            line += "RSS \(mb(growth.from.rss)) at " + String(format: "%.0f", growth.from.elapsed / 60) + " min → "
                + "\(mb(growth.to.rss)) at " + String(format: "%.0f", growth.to.elapsed / 60) + " min: "
                + String(format: "%+.1f %%", growth.growth * 100)
        } else {
            line += "too few samples after the warm-up for a memory figure"
        }
        let p99s = result.samples.compactMap(\.latencyP99).sorted()
        if let worst = p99s.last {
            line += String(format: "; change→delivery p99 per sample: median %.0f ms, worst %.0f ms",
                           BenchTable.median(p99s).seconds * 1000, worst.seconds * 1000)
        }
        line += "; starts \(result.starts), ends \(result.ends) of \(result.followers)"
            + (result.everyActivityEnded ? " (exact)" : " (NOT EXACT: \(result.duplicates) duplicated, \(result.strays) strays)")
        line += "; serve \(result.serveExit); \(csv), \(svg)"
        StandardStreams.err(line)
    }
}

/// Appends samples to the CSV as they come, so a soak cut short still leaves its data.
final class SoakCSVWriter: Sendable {
    private let handle: FileHandle

    init(url: URL) throws {
        try (SoakReport.csvHeader + "\n").write(to: url, atomically: true, encoding: .utf8)
        handle = try FileHandle(forWritingTo: url)
        handle.seekToEndOfFile()
    }

    func append(_ sample: SoakSample) {
        handle.write(Data((SoakReport.csvRow(sample) + "\n").utf8))
    }

    deinit { try? handle.close() }
}
