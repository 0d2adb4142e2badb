import AsyncHTTPClient
import Crypto
import Foundation
import MatchcastCLI
import MatchcastService
import MatchcastTesting
import NIOCore
import NIOHTTP1
import Synchronization

/// The fan-out measured through `matchcast serve` as users run it: a child process on one store, a feed this
/// process controls (`ControlledFeed`), deliveries read from the child's stdout (`--sink stdout`, `DeliveryTap`),
/// and setup through the HTTP API only, as devices would, with a few concurrent keep-alive clients.
///
/// 1. N devices register (`POST /v1/devices`) and set a push-to-start token; 2. each follows the match; 3. the
/// match goes live: N starts; 4. each device registers its started activity's update token
/// (`PUT /v1/activities/{id}`); 5. K goals, each timed from the feed's change to the first and to the last
/// delivery. Every device must get exactly one start and, per goal, exactly one update at priority 10 (the goal);
/// routine updates at priority 5 (stale-date refreshes, which serve sends when a run outlasts
/// `activities.minimumStalenessSeconds`) are counted apart.
struct ServeBenchmark: Sendable {
    struct Options: Sendable {
        var devices = 20_000
        var goals = 3
        /// Concurrent API clients (keep-alive connections).
        var clients = 8
        /// The feed's `retryAfterMs`, and serve's `polling.minPollMs`: how often serve polls the match.
        var pollMs = 100
        /// The `matchcast` to start (`serve`).
        var executable: String
        var store: BenchStoreKind
        /// The PostgreSQL server to make a scratch database on (`.postgres` only).
        var postgresServer: String?
        var serveLogLevel = "warning"
        /// Where serve delivers: its stdout, or APNs (`fakeAPNs`, an independent fake in a process of its own).
        var sink = ServeBenchSink.stdout
        /// The `matchcast-fake-apns` executable (`.apns` only).
        var fakeAPNs = ""
        /// serve's `--apns-max-connections` (`.apns` only); serve's default when nil.
        var apnsConnections: Int?
        /// Longest wait for any one phase.
        var phaseTimeout: Duration = .seconds(300)
        /// Before the goals: how long serve's CPU is measured with the match live and nothing changing (its polls and
        /// ticks alone).
        var quiet: Duration = .seconds(5)
        /// After the last goal: how long to wait for deliveries that should not come (duplicates, strays).
        var settle: Duration = .milliseconds(500)
        var verbose = true
        /// Polled in every wait and between requests: true stops the run (a signal).
        var interrupted: @Sendable () -> Bool = { false }
    }

    /// A timed setup phase through the API.
    struct Phase: Sendable {
        var name: String
        var count: Int
        var unit: String
        var duration: Duration
        var rate: Double { Double(count) / max(duration.seconds, 1e-9) }
    }

    /// One wave of deliveries after a feed change (the kick-off's starts, or a goal's updates).
    struct Wave: Sendable {
        var label: String
        var deliveries: Int
        var duplicates: Int
        /// Routine updates (priority 5) that came while the wave was awaited: work serve did meanwhile.
        var routine: Int
        var changeToFirst: Duration
        var firstToLast: Duration
        var changeToLast: Duration
        /// serve's CPU time (user + system) from the change to the last delivery; nil where unknown.
        var serveCPU: Duration?
        /// The fake APNs' CPU time over the same span (`--sink apns`); nil otherwise.
        var fakeCPU: Duration?
        var deliveriesPerSecond: Double { Double(deliveries) / max(firstToLast.seconds, 1e-9) }
    }

    struct Result: Sendable {
        var store: BenchStoreKind
        var devices: Int
        var phases: [Phase]
        var kickOff: Wave
        var goals: [Wave]
        /// serve's CPU time over `quietWindow` before the goals (the match live, nothing changing); nil where unknown.
        var quietCPU: Duration?
        var quietWindow: Duration = .zero
        /// Deliveries seen in the whole run by event, and how many were expected (N starts, N × K updates, 0 ends).
        var starts = 0
        /// Priority-10 updates (the goals).
        var updates = 0
        /// Priority-5 updates (stale-date refreshes and the like): allowed, reported.
        var routineUpdates = 0
        var ends = 0
        /// Lines that were not deliveries of this benchmark's devices.
        var strays = 0
        var serveExit = ""
        var feedRequests = 0
        var stdoutBytes = 0

        var isExact: Bool {
            starts == devices && updates == devices * goals.count && ends == 0 && strays == 0
                && kickOff.duplicates == 0 && goals.allSatisfy { $0.duplicates == 0 && $0.deliveries == devices }
        }
    }

    static let matchId = "bench-football-1"

    let options: Options

    func run() async throws -> Result {
        let settings = ServeSession<ControlledFeed>.Settings(
            what: "serve", store: options.store, postgresServer: options.postgresServer, executable: options.executable,
            serveLogLevel: options.serveLogLevel, pollMs: options.pollMs, clients: options.clients,
            interrupted: options.interrupted)
        let options = self.options
        var (result, exit) = try await ServeSession.run(settings, feed: {
            try await ControlledFeed.start(matchId: ServeBenchmark.matchId, retryAfterMs: options.pollMs)
        }, sink: { directory in
            guard options.sink == .apns else { return (["--sink", "stdout"], nil) }
            let (fake, arguments) = try await FakeAPNsChild.start(
                executable: options.fakeAPNs, directory: directory, maxConnections: options.apnsConnections,
                timeout: options.phaseTimeout)
            return (arguments, fake)
        }) { session in
            let run = Run(options: options, api: session.api, feed: session.feed, child: session.child, fake: session.sinkChild)
            var result = try await run.measure(n: options.devices)
            result.feedRequests = session.feed.requests
            return result
        }
        result.serveExit = exit
        return result
    }

    /// The measuring part, with the child and feed running.
    struct Run {
        let options: Options
        let api: DeviceAPI
        let feed: ControlledFeed
        let child: ServeChild
        /// The fake APNs, with `--sink apns`.
        let fake: ServeChild?

        /// Where deliveries are read: what the fake APNs answered 200, or serve's stdout.
        var tap: DeliveryTap { fake?.tap ?? child.tap }

        func say(_ line: String) {
            if options.verbose { StandardStreams.err("serve bench (\(options.store.rawValue)): \(line)") }
        }

        func measure(n: Int) async throws -> Result {
            try await waitForHealth()
            let api = self.api
            var phases: [Phase] = []
            let devices = DeviceTable(count: n)

            // 1. Registration with push-to-start tokens.
            var begin = ContinuousClock.now
            try await api.parallel(n, clients: options.clients) { index in
                let registration = try await api.registerDevice()
                try await api.putPushToStartToken(registration, token: Self.token(.pushToStart, index))
                devices.set(index, registration)
            }
            phases.append(Phase(name: "register + push-to-start token", count: n, unit: "devices", duration: .now - begin))
            say(String(format: "%d devices registered with push-to-start tokens: %.0f/s", n, phases.last!.rate))

            // 2. Follows.
            begin = .now
            try await api.parallel(n, clients: options.clients) { index in
                try await api.follow(devices.get(index), matchId: ServeBenchmark.matchId)
            }
            phases.append(Phase(name: "follow", count: n, unit: "follows", duration: .now - begin))
            say(String(format: "%d follows: %.0f/s", n, phases.last!.rate))
            // The broker polls the match it now has followers for; wait until it has seen it (scheduled).
            try await waits.until("the broker knows the match") { try await api.matchIsKnown(devices.get(0), matchId: ServeBenchmark.matchId) }

            // 3. Kick-off: N starts.
            var starts = Tally(event: .start, devices: n, cursor: tap.count)
            var cpuBefore = child.cpuTime()
            var fakeBefore = fake?.cpuTime()
            var changed = feed.kickOff(retryAfterMs: options.pollMs)
            try await waits.collect(&starts, what: "\(n) starts")
            var kickOff = starts.wave(label: "kick-off (starts)", changed: changed, cpu: Self.difference(child.cpuTime(), cpuBefore))
            kickOff.fakeCPU = Self.difference(fake?.cpuTime(), fakeBefore)
            say(String(format: "kick-off: %d starts, change→last %.1f ms", n, kickOff.changeToLast.seconds * 1000))

            // 4. Update tokens, as the app reports them once its activity runs.
            let activityIds = starts.activityIds
            begin = .now
            try await api.parallel(n, clients: options.clients) { index in
                guard let activityId = activityIds[index] else { throw CommandFailure("device \(index) has no started activity") }
                try await api.putActivity(
                    devices.get(index), activityId: activityId, matchId: ServeBenchmark.matchId, updateToken: Self.token(.update, index))
            }
            phases.append(Phase(name: "update token", count: n, unit: "tokens", duration: .now - begin))
            say(String(format: "%d update tokens registered: %.0f/s", n, phases.last!.rate))

            // 5. Quiet: the match live, every device tokened, nothing changing; what polls and ticks alone cost serve.
            cpuBefore = child.cpuTime()
            let quietBegin = ContinuousClock.now
            try await Task.sleep(for: options.quiet)
            let quietCPU = Self.difference(child.cpuTime(), cpuBefore)
            let quietWindow = ContinuousClock.now - quietBegin
            if let quietCPU {
                say(String(format: "quiet for %.1f s: serve CPU %.1f %% of a core", quietWindow.seconds,
                           100 * quietCPU.seconds / quietWindow.seconds))
            }

            // 6. Goals.
            var goals: [Wave] = []
            for goal in 1...options.goals {
                try await Task.sleep(for: .milliseconds(Int64(options.pollMs) * 2))  // a poll or two of quiet
                var updates = Tally(event: .update, priority: 10, devices: n, cursor: tap.count)
                cpuBefore = child.cpuTime()
                fakeBefore = fake?.cpuTime()
                changed = feed.goal(retryAfterMs: options.pollMs)
                try await waits.collect(&updates, what: "goal \(goal): \(n) updates")
                var wave = updates.wave(label: "goal \(goal)", changed: changed, cpu: Self.difference(child.cpuTime(), cpuBefore))
                wave.fakeCPU = Self.difference(fake?.cpuTime(), fakeBefore)
                goals.append(wave)
                say(String(format: "goal %d: change→first %.1f ms, first→last %.1f ms", goal, wave.changeToFirst.seconds * 1000,
                           wave.firstToLast.seconds * 1000))
            }

            // Anything more (a duplicate, an end) would come now.
            try await Task.sleep(for: options.settle)
            var result = Result(store: options.store, devices: n, phases: phases, kickOff: kickOff, goals: goals,
                                quietCPU: quietCPU, quietWindow: quietWindow)
            tap.withLines(from: 0) { lines in
                for line in lines {
                    if line.device < 0 || Int(line.device) >= n { result.strays += 1; continue }
                    switch line.event {
                    case .start: result.starts += 1
                    case .update:
                        if line.priority == 10 { result.updates += 1 } else { result.routineUpdates += 1 }
                    case .end: result.ends += 1
                    case .other: result.strays += 1
                    }
                }
            }
            result.strays += tap.unparsed.count
            result.stdoutBytes = tap.bytes
            return result
        }

        private var waits: ServeWaits {
            ServeWaits(child: child, sinkChild: fake, phaseTimeout: options.phaseTimeout, interrupted: options.interrupted)
        }

        private func waitForHealth() async throws {
            try await waits.until("serve answers /healthz") { try await api.isHealthy() }
        }

        enum TokenKind: UInt8 { case pushToStart = 0xa1, update = 0xb2 }

        /// 64 hex digits: the device's index in the first 8 (how `DeliveryTap` knows whose a delivery is), then the kind.
        static func token(_ kind: TokenKind, _ index: Int) -> String {
            String(format: "%08x", index) + String(repeating: String(format: "%02x", kind.rawValue), count: 28)
        }

        static func difference(_ after: Duration?, _ before: Duration?) -> Duration? {
            guard let after, let before else { return nil }
            return after - before
        }
    }

    /// Per device, how many deliveries of one event arrived since the change, and when.
    struct Tally {
        let event: DeliveryTap.Event
        /// Only deliveries at this APNs priority count (nil: any); updates at another are `routine`.
        let priority: UInt8?
        var cursor: Int
        var counts: [Int32]
        var activityIds: [String?]
        var distinct = 0
        var duplicates = 0
        var routine = 0
        var first: Int64?
        /// The arrival that completed the set: the last device's first delivery.
        var last: Int64?

        init(event: DeliveryTap.Event, priority: UInt8? = nil, devices: Int, cursor: Int) {
            self.event = event
            self.priority = priority
            self.cursor = cursor
            counts = Array(repeating: 0, count: devices)
            activityIds = event == .start ? Array(repeating: nil, count: devices) : []
        }

        mutating func absorb(_ lines: ArraySlice<DeliveryTap.Line>) {
            for line in lines {
                cursor += 1
                if line.event == .update, let priority, line.priority != priority { routine += 1 }
                guard line.event == event, priority == nil || line.priority == priority,
                      line.device >= 0, Int(line.device) < counts.count else { continue }
                let device = Int(line.device)
                counts[device] += 1
                if counts[device] == 1 {
                    distinct += 1
                    if first == nil { first = line.time }
                    last = line.time
                    if event == .start { activityIds[device] = line.activityId }
                } else {
                    duplicates += 1
                }
            }
        }

        func wave(label: String, changed: Int64, cpu: Duration?) -> Wave {
            let first = self.first ?? changed
            let last = self.last ?? first
            return Wave(
                label: label, deliveries: distinct, duplicates: duplicates, routine: routine, changeToFirst: .nanoseconds(first - changed),
                firstToLast: .nanoseconds(last - first), changeToLast: .nanoseconds(last - changed), serveCPU: cpu)
        }
    }
}
