import AsyncHTTPClient
import Foundation
import MatchcastCLI
import MatchcastCore
import MatchcastTesting

/// `matchcast serve` left running for a long time, as users run it: a child process on one store, N devices set up
/// through the HTTP API following one match, and a feed (`ControlledFeed`) that shows a recorded match's in-play
/// states one after another, every `stepEvery`, in a loop (`SoakTimeline`), so deliveries never stop. Every
/// `sampleEvery` it samples serve: resident memory, open files, CPU, the outbox's depth, and how long each feed
/// change took to reach the deliveries read from serve's stdout. At the end the match's final state is shown and
/// every activity must end.
struct SoakBenchmark: Sendable {
    struct Options: Sendable {
        var followers = 10_000
        var duration: Duration = .seconds(3600)
        var sampleEvery: Duration = .seconds(60)
        var stepEvery: Duration = .seconds(15)
        /// serve's polling interval (the feed's `retryAfterMs`, serve's `polling.minPollMs` and default).
        var pollMs = 1000
        var clients = 8
        var executable: String
        var store: BenchStoreKind
        var postgresServer: String?
        var serveLogLevel = "warning"
        var timeline: SoakTimeline
        var phaseTimeout: Duration = .seconds(300)
        var verbose = true
        var interrupted: @Sendable () -> Bool = { false }
        /// Each sample as it is taken (the command writes the CSV as it goes).
        var onSample: @Sendable (SoakSample) -> Void = { _ in }
    }

    struct Result: Sendable {
        var store: BenchStoreKind
        var followers: Int
        var setup: [ServeBenchmark.Phase] = []
        var samples: [SoakSample] = []
        /// States shown after the kick-off.
        var changes = 0
        var starts = 0
        var updates = 0
        var ends = 0
        /// Lines that were not deliveries to the soak's devices.
        var strays = 0
        /// Devices whose activity got more than one start or end.
        var duplicates = 0
        var serveExit = ""
        /// The last lines serve logged, read at the end of the run (at `--serve-log-level`): what a report of an odd
        /// run shows.
        var serveLogTail = ""

        var everyActivityEnded: Bool { ends == followers && starts == followers && duplicates == 0 && strays == 0 }
    }

    static let matchId = "soak-1"

    let options: Options

    func run() async throws -> Result {
        let settings = ServeSession<ControlledFeed>.Settings(
            what: "soak", store: options.store, postgresServer: options.postgresServer, executable: options.executable,
            serveLogLevel: options.serveLogLevel, pollMs: options.pollMs, clients: options.clients,
            interrupted: options.interrupted)
        let timeline = options.timeline
        let pollMs = options.pollMs
        var (result, exit) = try await ServeSession.run(settings, feed: {
            let feed = try await ControlledFeed.start(matchId: Self.matchId, retryAfterMs: pollMs)
            _ = feed.show(timeline.scheduled(at: Date()), retryAfterMs: pollMs)
            return feed
        }) { session in
            var result = Result(store: options.store, followers: options.followers)
            try await Run(options: options, api: session.api, feed: session.feed, child: session.child).soak(into: &result)
            return result
        }
        result.serveExit = exit
        return result
    }

    /// The soak itself, with the child and feed running.
    struct Run {
        let options: Options
        let api: DeviceAPI
        let feed: ControlledFeed
        let child: ServeChild

        var tap: DeliveryTap { child.tap }

        func say(_ line: String) {
            if options.verbose { StandardStreams.err("soak (\(options.store.rawValue)): \(line)") }
        }

        func soak(into result: inout Result) async throws {
            let n = options.followers
            try await waits.until("serve answers /healthz") { try await api.isHealthy() }
            let devices = DeviceTable(count: n)
            var begin = ContinuousClock.now
            try await api.parallel(n, clients: options.clients) { index in
                let registration = try await api.registerDevice()
                try await api.putPushToStartToken(registration, token: ServeBenchmark.Run.token(.pushToStart, index))
                try await api.follow(registration, matchId: SoakBenchmark.matchId)
                devices.set(index, registration)
            }
            result.setup.append(.init(name: "register + token + follow", count: n, unit: "devices", duration: .now - begin))
            try await waits.until("the broker knows the match") { try await api.matchIsKnown(devices.get(0), matchId: SoakBenchmark.matchId) }

            // Kick-off: every device's activity starts; then each registers its update token.
            var counts = Counts()
            var changes: [Int64] = [feed.show(options.timeline.state(0, at: Date()), retryAfterMs: options.pollMs)]
            var starts = ServeBenchmark.Tally(event: .start, devices: n, cursor: 0)
            try await waits.collect(&starts, what: "\(n) starts")
            let activityIds = starts.activityIds
            begin = .now
            try await api.parallel(n, clients: options.clients) { index in
                guard let activityId = activityIds[index] else { throw CommandFailure("device \(index) has no started activity") }
                try await api.putActivity(
                    devices.get(index), activityId: activityId, matchId: SoakBenchmark.matchId,
                    updateToken: ServeBenchmark.Run.token(.update, index))
            }
            result.setup.append(.init(name: "update token", count: n, unit: "tokens", duration: .now - begin))
            say("\(n) devices following, started and tokened; soaking for \(options.duration)")

            // Steady state: a change every `stepEvery`, a sample every `sampleEvery`.
            var changeCursor = 0
            let origin = ContinuousClock.now
            let end = origin + options.duration
            var nextStep = origin + options.stepEvery
            var nextSample = origin + options.sampleEvery
            var step = 1
            var cpuBefore = child.cpuTime()
            var sampledAt = origin
            var changesInInterval = 0
            while true {
                let wake = min(nextStep, nextSample, end)
                while ContinuousClock.now < wake {
                    try waits.check("the soak", deadline: end + options.phaseTimeout)
                    try await Task.sleep(until: min(wake, .now + .milliseconds(500)))
                }
                if ContinuousClock.now >= nextStep && ContinuousClock.now < end {
                    changes.append(feed.show(options.timeline.state(step, at: Date()), retryAfterMs: options.pollMs))
                    step += 1
                    changesInInterval += 1
                    nextStep += options.stepEvery
                }
                guard ContinuousClock.now >= nextSample || ContinuousClock.now >= end else { continue }
                // A sample: what serve delivered since the last, and how it looks now.
                var latencies = LatencySample()
                let lines = tap.drain()
                for line in lines {
                    counts.add(line, devices: n)
                    guard line.event == .update else { continue }
                    while changeCursor + 1 < changes.count && changes[changeCursor + 1] <= line.time { changeCursor += 1 }
                    latencies.add(.nanoseconds(max(0, line.time - changes[changeCursor])))
                }
                let now = ContinuousClock.now
                let cpu = child.cpuTime()
                let window = (now - sampledAt).seconds
                let sample = SoakSample(
                    elapsed: (now - origin).seconds, rss: ResidentMemory.of(pid: child.pid).current,
                    openFiles: Self.openFiles(pid: child.pid),
                    cpuPercent: ServeBenchmark.Run.difference(cpu, cpuBefore).map { 100 * $0.seconds / max(window, 1e-9) },
                    outboxDepth: try? await api.metric("matchcast_outbox_deliveries"),
                    changes: changesInInterval, deliveries: lines.count,
                    latencyP50: latencies.percentile(50), latencyP99: latencies.percentile(99), latencyMax: latencies.percentile(100))
                result.samples.append(sample)
                options.onSample(sample)
                let p99 = sample.latencyP99.map { String(format: "%.0f ms", $0.seconds * 1000) } ?? "-"
                say(String(
                    format: "%.1f min: RSS %.1f MB, %d open files, CPU %.1f %%, %d deliveries, ",
                    sample.elapsed / 60, Double(sample.rss) / 1_048_576, sample.openFiles, sample.cpuPercent ?? 0,
                    sample.deliveries) + "change→delivery p99 \(p99)")
                cpuBefore = cpu
                sampledAt = now
                changesInInterval = 0
                nextSample += options.sampleEvery
                if now >= end { break }
            }
            result.changes = step - 1

            // The final: every activity ends.
            var ends = ServeBenchmark.Tally(event: .end, devices: n, cursor: 0)
            _ = feed.show(options.timeline.finalState(after: step, at: Date()), retryAfterMs: options.pollMs)
            let deadline = ContinuousClock.now + options.phaseTimeout
            var finalLines: [DeliveryTap.Line] = []
            while ends.distinct < n {
                let lines = tap.drain()
                finalLines += lines
                ends.absorb(lines[...])
                try waits.check("\(n) ends (\(ends.distinct) so far)", deadline: deadline)
                try await Task.sleep(for: .milliseconds(20))
            }
            try await Task.sleep(for: .milliseconds(500))  // a duplicate would come now
            finalLines += tap.drain()
            for line in finalLines { counts.add(line, devices: n) }
            result.starts = counts.starts.filter { $0 > 0 }.count
            result.ends = counts.ends.filter { $0 > 0 }.count
            result.duplicates = zip(counts.starts, counts.ends).filter { $0 > 1 || $1 > 1 }.count
            result.updates = counts.updates
            result.strays = counts.strays + tap.unparsed.count
            result.serveLogTail = child.logTail(40)
        }

        /// Per device, starts and ends seen; updates and strays in all.
        struct Counts {
            var starts: [Int32] = []
            var ends: [Int32] = []
            var updates = 0
            var strays = 0

            mutating func add(_ line: DeliveryTap.Line, devices: Int) {
                if starts.isEmpty {
                    starts = Array(repeating: 0, count: devices)
                    ends = starts
                }
                guard line.device >= 0, Int(line.device) < devices else {
                    strays += 1
                    return
                }
                switch line.event {
                case .start: starts[Int(line.device)] += 1
                case .update: updates += 1
                case .end: ends[Int(line.device)] += 1
                case .other: strays += 1
                }
            }
        }

        private var waits: ServeWaits {
            ServeWaits(child: child, sinkChild: nil, phaseTimeout: options.phaseTimeout, interrupted: options.interrupted)
        }

        /// Entries of `/proc/<pid>/fd`; 0 where there is no such folder.
        static func openFiles(pid: Int32) -> Int {
            (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
        }
    }
}
