#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Dispatch
import Foundation
import MatchcastCLI
import Synchronization

/// `matchcast-bench serve`: the fan-out measured through `matchcast serve` as users run it.
struct ServeBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Time goals fanned out by a `matchcast serve` child process, set up through its HTTP API.",
        discussion: """
            Starts `matchcast serve` (the `matchcast` beside this executable, or --executable) on each chosen store in turn: memory, sqlite (a file in a \
            temporary folder), postgres (a scratch database on the server of --postgres-url or MATCHCAST_POSTGRES_URL, \
            dropped afterwards). serve polls a feed this process serves on 127.0.0.1 (one football match in the native \
            v1 format, polled every --poll-ms) and writes its deliveries as NDJSON to stdout (--sink stdout), which this \
            process reads through a pipe on a thread of its own, timestamping each read as it returns.

            Setup goes through the HTTP API only, with --clients concurrent keep-alive clients: N devices register \
            and set a push-to-start token, each follows the match; the match goes live (N starts); each device \
            registers its activity's update token (PUT /v1/activities/{id}). Then --quiet-seconds with the match live and \
            nothing changing (serve's CPU over them: what its polls and ticks alone cost), and --goals goals, each timed from the \
            feed's change to the first and to the last delivery. Every device must get exactly one start and one \
            priority-10 update per goal (exit 1 otherwise); routine priority-5 updates (stale-date refreshes, \
            sent when a run outlasts activities.minimumStalenessSeconds) are counted apart. The child is stopped with SIGTERM (SIGKILL after 10 s) however the \
            benchmark ends. The tables go to stderr. See docs/performance.md.

            Examples:
              swift build -c release
              .build/release/matchcast-bench serve --store sqlite
              .build/release/matchcast-bench serve --store all --postgres-url postgres://postgres@127.0.0.1:5432/postgres
              .build/release/matchcast-bench serve --sink apns --store memory,sqlite --devices 20000
            """
    )

    @OptionGroup var child: ServeChildOptions

    @Option(help: "Devices, each following the match.")
    var devices = 20_000

    @Option(help: "Timed goals.")
    var goals = 3

    @Option(help: "Seconds before the goals in which serve's CPU is measured with the match live and nothing changing.")
    var quietSeconds = 5

    @Option(help: "How often serve polls the feed, in ms (the feed's retryAfterMs and serve's polling.minPollMs).")
    var pollMs = 100

    @Option(help: """
        Where serve delivers: stdout (its NDJSON, piped here) or apns (matchcast-fake-apns, an APNs on \
        swift-nio-http2 in a process of its own, which reports each 200 answer).
        """)
    var sink = ServeBenchSink.stdout

    @Option(name: .customLong("fake-apns"), help: "The matchcast-fake-apns executable (default: beside this one).")
    var fakeAPNs: String?

    @Option(name: .customLong("apns-connections"), help: "serve's --apns-max-connections with --sink apns (default: serve's).")
    var apnsConnections: Int?

    func validate() throws {
        guard (1...1_000_000).contains(devices) else { throw ValidationError("--devices must be 1...1000000") }
        guard (1...100).contains(goals) else { throw ValidationError("--goals must be 1...100") }
        guard (1...600).contains(quietSeconds) else { throw ValidationError("--quiet-seconds must be 1...600") }
        guard (10...10_000).contains(pollMs) else { throw ValidationError("--poll-ms must be 10...10000") }
        if let apnsConnections, !(1...64).contains(apnsConnections) { throw ValidationError("--apns-connections must be 1...64") }
        if sink != .apns, apnsConnections != nil || fakeAPNs != nil {
            throw ValidationError("--apns-connections and --fake-apns need --sink apns")
        }
    }

    func run() async throws {
        let postgresServer = try child.postgresServer(for: "serve")
        let signals = SignalFlag.install()
        defer { signals.uninstall() }
        StandardStreams.err("load average (1, 5, 15 min) at the start: \(BenchTable.loadAverage)")
        var results: [ServeBenchmark.Result] = []
        for kind in child.store.kinds {
            let benchmark = ServeBenchmark(options: ServeBenchmark.Options(
                devices: devices, goals: goals, clients: child.clients, pollMs: pollMs,
                executable: child.matchcast, store: kind, postgresServer: postgresServer,
                serveLogLevel: child.serveLogLevel, sink: sink, fakeAPNs: fakeAPNs ?? BenchExecutables.beside("matchcast-fake-apns"),
                apnsConnections: apnsConnections, phaseTimeout: .seconds(child.timeout), quiet: .seconds(quietSeconds),
                interrupted: { signals.isSet }))
            do {
                results.append(try await benchmark.run())
            } catch {
                StandardStreams.err("matchcast-bench serve: store \(kind.rawValue): \(error)")
                if !results.isEmpty { ServeBenchTable.print(results, pollMs: pollMs, sink: sink) }
                throw ExitCode(signals.isSet ? 130 : 1)
            }
        }
        ServeBenchTable.print(results, pollMs: pollMs, sink: sink)
        StandardStreams.err("load average (1, 5, 15 min) at the end: \(BenchTable.loadAverage) on \(ProcessInfo.processInfo.activeProcessorCount) cores")
        let inexact = results.filter { !$0.isExact }
        if !inexact.isEmpty {
            StandardStreams.err("matchcast-bench serve: not every device got exactly one start and one update per goal on "
                + inexact.map(\.store.rawValue).joined(separator: ", "))
            throw ExitCode(1)
        }
    }
}

/// The executables the benchmarks start: this one (`matchcast-bench fake-apns`), and `matchcast` and
/// `matchcast-fake-apns`, which `swift build` puts in the same folder.
enum BenchExecutables {
    /// This program's own file.
    static var own: String {
        #if os(Linux)
        "/proc/self/exe"
        #else
        CommandLine.arguments[0]
        #endif
    }

    /// `name` in this program's folder.
    static func beside(_ name: String) -> String {
        let own = URL(fileURLWithPath: own).resolvingSymlinksInPath()
        return own.deletingLastPathComponent().appendingPathComponent(name).path
    }
}

/// SIGINT/SIGTERM while `bench serve` runs: the first sets a flag every wait checks, so the run stops and cleans up
/// (child stopped, temporary files and scratch database removed); a second one exits at once.
/// (`@unchecked`: `sources` is written once, in `install`, before the flag is shared.)
final class SignalFlag: @unchecked Sendable {
    private let flag = Atomic<Bool>(false)
    private var sources: [any DispatchSourceSignal] = []

    var isSet: Bool { flag.load(ordering: .relaxed) }

    static func install() -> SignalFlag {
        let flag = SignalFlag()
        var made: [any DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler {
                if flag.flag.exchange(true, ordering: .relaxed) { exit(130) }
                StandardStreams.err("matchcast-bench serve: stopping (a second signal exits at once)")
            }
            source.resume()
            made.append(source)
        }
        flag.sources = made
        return flag
    }

    func uninstall() {
        for source in sources { source.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}

/// The results of `bench serve`, on stderr.
enum ServeBenchTable {
    static func print(_ results: [ServeBenchmark.Result], pollMs: Int, sink: ServeBenchSink) {
        let ms = { (duration: Duration) in String(format: "%.1f", duration.seconds * 1000) }
        let source = sink == .apns
            ? "serve's APNs sink into matchcast-fake-apns (swift-nio-http2), whose report of each 200 answer is"
            : "serve's stdout NDJSON (--sink stdout),"
        StandardStreams.err("""

            sink: \(source) piped to this process and timestamped as each read returns; \
            serve polls the feed every \(pollMs) ms
            """)
        let header = ["store", "devices", "wave", "change→first ms", "first→last ms", "change→last ms", "deliveries/s",
                      "serve CPU ms"] + (sink == .apns ? ["fake CPU ms"] : []) + ["dups", "p5 updates"]
        var lines = [header]
        for result in results {
            for wave in [result.kickOff] + result.goals {
                lines.append([
                    result.store.rawValue, "\(result.devices)", wave.label, ms(wave.changeToFirst), ms(wave.firstToLast),
                    ms(wave.changeToLast), rate(wave),
                    wave.serveCPU.map(ms) ?? "?",
                ] + (sink == .apns ? [wave.fakeCPU.map(ms) ?? "?"] : []) + ["\(wave.duplicates)", "\(wave.routine)"])
            }
        }
        printAligned(lines)
        StandardStreams.err("")
        var setup = [["store", "devices", "phase", "s", "per second"]]
        for result in results {
            for phase in result.phases {
                setup.append([
                    result.store.rawValue, "\(result.devices)", phase.name, String(format: "%.2f", phase.duration.seconds),
                    String(format: "%.0f \(phase.unit)/s", phase.rate),
                ])
            }
        }
        printAligned(setup)
        StandardStreams.err("")
        for result in results {
            let goals = result.goals.map(\.firstToLast).sorted()
            let medianGoal = goals.isEmpty ? Duration.zero : BenchTable.median(goals)
            let rates = result.goals.filter { $0.firstToLast > .zero }.map(\.deliveriesPerSecond).sorted()
            StandardStreams.err(
                "\(result.store.rawValue): goals first→last median \(ms(medianGoal)) ms, worst \(ms(goals.last ?? .zero)) ms, "
                    + (rates.isEmpty ? "every goal in one read" : String(format: "median %.0f deliveries/s", BenchTable.median(rates)))
                    + "; deliveries seen: \(result.starts) starts, \(result.updates) priority-10 updates, \(result.ends) ends, "
                    + "\(result.strays) other lines (expected \(result.devices), \(result.devices * result.goals.count), 0, 0): "
                    + (result.isExact ? "exact" : "NOT EXACT")
                    + "; \(result.routineUpdates) routine priority-5 updates (stale-date refreshes)"
                    + (result.quietCPU.map {
                        String(format: "; quiet (live, nothing changing) %.1f s: serve CPU %.1f %% of a core",
                               result.quietWindow.seconds, 100 * $0.seconds / max(result.quietWindow.seconds, 1e-9))
                    } ?? "")
                    + "; \(String(format: "%.1f", Double(result.stdoutBytes) / 1_000_000)) MB of NDJSON, "
                    + "\(result.feedRequests) feed requests; serve \(result.serveExit)")
        }
    }

    /// N / first→last; a wave that came in one read has no spread to divide by.
    private static func rate(_ wave: ServeBenchmark.Wave) -> String {
        wave.firstToLast > .zero ? String(format: "%.0f", wave.deliveriesPerSecond) : "one read"
    }

    private static func printAligned(_ lines: [[String]]) {
        BenchTable.printAligned(lines, textColumns: 3)
    }
}
