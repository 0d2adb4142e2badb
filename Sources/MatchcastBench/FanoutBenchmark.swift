import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Logging
import MatchcastCLI
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import Metrics
import Synchronization

/// One match update fanned out to N activities through the broker's real pipeline:
/// `LifecycleManager` over a store, a `DeliveryDispatcher`, and the sink under test.
///
/// Setup (not timed) does what devices would: N devices with push-to-start tokens each follow one
/// football match, the match goes live (N starts go out), and each device reports the update token
/// of its started activity. Then each of K goals is ingested and timed: from calling `ingest` to
/// the sink returning for the last batch (every byte written or acknowledged), and to `ingest`
/// returning (the changed activities persisted as well).
///
/// Devices, push-to-start tokens and follows are registered a few calls at a time (`setupWidth`), as many
/// devices would at once: one call after the other is one round trip after the other on a server store
/// (PostgreSQL: over 400 s for 100,000 devices). Every store gets the same calls; the timed part is untouched.
/// With `--setup follow`, the update tokens are registered `tokenWidth` at a time, as many phones report them at once
/// (`LifecycleManager` registers those that queue behind its gate together).
struct FanoutBenchmark: Sendable {
    /// What to run.
    struct Options: Sendable {
        var activities: Int
        var updates: Int
        var seed: UInt64 = 1
        var setup: SetupPath = .follow
        /// Said on stderr as setup goes (phase timings).
        var verbose = true
        /// After each setup phase, the allocator's free memory is given back to the system and the RSS said again
        /// (`ResidentMemory.trimFreeMemory`): what the store and the manager hold, without what the setup left.
        var trimAfterSetup = false
        /// Restore setup: activity ids made over time, as a deployment's follows are (`--ids-in-creation-order`).
        var idsInCreationOrder = false
        /// Called once setup is done, before the first timed update (the APNs mode turns on its
        /// error mix here, so that the starts of the setup are not affected).
        var beforeTimedUpdates: (@Sendable () -> Void)?
        /// Called after each timed update with its number and the instant `ingest` was called.
        var afterUpdate: (@Sendable (_ update: Int, _ started: ContinuousClock.Instant) -> Void)?
        /// Android or web devices: each device's address (`DirectAddress.stored`, one per activity) in the place of
        /// its push-to-start token. The kick-off's starts leave their activities active: no update tokens to register.
        var addresses: [String]?
        /// Apps the devices belong to, in turn (docs/apps.md): 1 is the default app alone; with more, one update's
        /// deliveries carry as many topics.
        var apps = 1
    }

    /// How the waiting activities come to be.
    enum SetupPath: String, Sendable, CaseIterable {
        /// `LifecycleManager.follow` per device, as `ReplayRunner` and the HTTP API do.
        case follow
        /// The store is filled with the follows and their waiting activities in one
        /// `saveActivities`, then `LifecycleManager.restore()` loads them, as after a restart.
        /// The kick-off is the same as with `follow`; the update tokens are then registered the same
        /// way: each started activity's lifecycle takes its token (`updateTokenRegistered`, which must
        /// send nothing), saved with `saveActivities` a chunk at a time, and a restarted manager
        /// restores them. The timed updates are the same as with `follow`.
        case restore
    }

    /// One timed update.
    struct Row: Sendable {
        var update: Int
        /// The wall-clock time `ingest` was called, to line the update up with samples taken outside the process
        /// (a database's statistics, `perf`).
        var startedAt: Date
        var activities: Int
        var deliveries: Int
        var failures: Int
        /// `ingest` called → the sink's `deliver` first called: lifecycles run, deliveries built.
        var build: Duration
        /// `ingest` called → the sink returned for the last batch.
        var fanOut: Duration
        /// `ingest` called → `ingest` returned (persisting included).
        var ingest: Duration
        /// Process CPU time (all threads) from calling `ingest` to the last batch returning.
        var cpuToLastByte: Duration
        var payloadBytes: Int
        var distinctPayloads: Int
        var sinkCalls: Int
        var rss: ResidentMemory

        var deliveriesPerSecond: Double { Double(deliveries) / max(fanOut.seconds, 1e-9) }
    }

    /// Setup phase timings, for the report.
    struct Setup: Sendable {
        var phases: [(name: String, duration: Duration)] = []
        /// The match going live: `ingest` of the kick-off, which sends the N push-to-start starts.
        var kickOff: Duration = .zero
        /// Every started activity's update token registered through `LifecycleManager`.
        var updateTokens: Duration = .zero
    }

    let options: Options
    let store: any MatchcastStore
    let sink: MeasuringSink
    let logger: Logger

    static let matchId = "bench-football-1"

    func run() async throws -> (setup: Setup, rows: [Row]) {
        let clock = BenchClock(Date(timeIntervalSince1970: 1_767_225_600))  // 2026-01-01T00:00:00Z
        let now: @Sendable () -> Date = { clock.now }
        let metrics = BrokerMetrics(factory: NOOPMetricsHandler.instance)
        let otherApps = (1..<options.apps).map { AppCatalog.App(id: "app\($0)", bundleId: "com.example.bench\($0)") }
        let settings = BrokerSettings(
            activityPolicy: ActivityPolicy(coalesceInterval: .zero), seed: options.seed, otherApps: otherApps)
        let (store, sink, logger) = (self.store, self.sink, self.logger)
        func makeManager() -> LifecycleManager {
            LifecycleManager(
                store: store, dispatcher: DeliveryDispatcher(sinks: [sink], metrics: metrics, logger: logger),
                settings: settings, metrics: metrics, now: now, logger: logger)
        }
        var manager = makeManager()

        var setup = Setup()
        var phaseStart = ContinuousClock.now
        // The process's CPU time beside each phase's wall time: on a shared machine the wall time swings with the
        // load, the CPU time much less.
        var phaseCPU = processCPUMicroseconds()
        @discardableResult
        func phase(_ name: String) -> Duration {
            let end = ContinuousClock.now
            let took = end - phaseStart
            let cpu = processCPUMicroseconds()
            setup.phases.append((name, took))
            if options.verbose {
                // Resident memory after each phase says what each part of the broker holds (store, cache, outbox).
                var memory = "RSS \(ResidentMemory.current().current >> 20) MB"
                if options.trimAfterSetup {
                    ResidentMemory.trimFreeMemory()
                    memory += ", \(ResidentMemory.current().current >> 20) MB after malloc_trim"
                }
                StandardStreams.err("setup: \(name) \(Self.milliseconds(took)) ms (CPU \((cpu - phaseCPU) / 1000) ms, \(memory))")
            }
            phaseStart = end
            phaseCPU = cpu
            return took
        }

        let n = options.activities
        if options.verbose {
            StandardStreams.err("setup: one ActivityRecord is \(MemoryLayout<ActivityRecord>.stride) bytes inline, "
                + "one Delivery \(MemoryLayout<Delivery>.stride), one MatchUpdate \(MemoryLayout<MatchUpdate>.stride)")
        }
        let deviceIds = (0..<n).map { index in
            AppCatalog.deviceId(
                app: index % options.apps == 0 ? AppCatalog.defaultId : "app\(index % options.apps)",
                base: String(format: "bench-device-%07d", index))
        }
        let pushToStartTokens = options.addresses ?? deviceIds.map { SyntheticToken.make(for: "push-to-start:" + $0) }
        guard pushToStartTokens.count == n else { throw CommandFailure("setup: \(pushToStartTokens.count) addresses for \(n) devices") }
        let created = now()
        try await Self.concurrently(Array(zip(deviceIds, pushToStartTokens))) { deviceId, token in
            try await store.createDevice(DeviceRecord(id: deviceId, secretHash: "", createdAt: created))
            try await store.setPushToStartToken(PushToStartTokenRecord(
                deviceId: deviceId, token: token, environment: .production, updatedAt: created))
        }
        phase("\(n) devices with \(options.addresses == nil ? "push-to-start tokens" : "FCM tokens or Web Push subscriptions")")
        switch options.setup {
        case .follow:
            for deviceId in deviceIds {
                _ = try await store.addFollow(FollowRecord(deviceId: deviceId, matchId: Self.matchId, createdAt: now()))
                try await manager.follow(deviceId: deviceId, matchId: Self.matchId, environment: .production)
            }
            phase("\(n) follows via LifecycleManager.follow (waiting activities)")
        case .restore:
            var rng = SeededGenerator(seed: options.seed)
            var waiting: [ActivityRecord] = []
            waiting.reserveCapacity(n)
            try await Self.concurrently(deviceIds) { deviceId in
                _ = try await store.addFollow(FollowRecord(deviceId: deviceId, matchId: Self.matchId, createdAt: created))
            }
            let activityIds = Self.activityIds(
                count: n, madeAt: now(), inCreationOrder: options.idsInCreationOrder, using: &rng)
            for (deviceId, activityId) in zip(deviceIds, activityIds) {
                waiting.append(ActivityRecord(
                    deviceId: deviceId, environment: .production,
                    lifecycle: ActivityLifecycle(activityId: activityId, matchId: Self.matchId), updatedAt: now()))
            }
            try await store.saveActivities(waiting)
            phase("\(n) follows and waiting activities saved to the store")
            try await manager.restore()
            phase("LifecycleManager.restore()")
        }

        var match = BenchMatch(id: Self.matchId)
        clock.advance(by: 60)
        try await manager.ingest(match.kickOff(at: now()), pollInterval: .seconds(5))
        let started = sink.takeStarted()
        setup.kickOff = phase("kick-off: \(started.count) \(options.addresses == nil ? "push-to-start starts" : "starts to the devices' addresses")")
        guard started.count == n else {
            throw CommandFailure("setup: \(started.count) of \(n) activities started")
        }

        clock.advance(by: 1)
        switch options.setup {
        case _ where options.addresses != nil:
            // Started on their devices' addresses, active at once: nothing for the apps to report.
            break
        case .follow:
            // Each start went to its device's push-to-start token: that names the device, with no read.
            let deviceByToken = Dictionary(uniqueKeysWithValues: zip(pushToStartTokens, deviceIds))
            let registering = manager
            try await Self.concurrently(started, width: Self.tokenWidth) { activityId, matchId, pushToStartToken in
                guard let deviceId = deviceByToken[pushToStartToken] else {
                    throw CommandFailure("setup: a start went to a push-to-start token of no bench device")
                }
                _ = try await registering.registerUpdateToken(
                    activityId: activityId, deviceId: deviceId, matchId: matchId,
                    token: SyntheticToken.make(for: "update:" + activityId), environment: .production)
            }
        case .restore:
            // As many apps reporting their tokens while the broker restarts: each lifecycle takes its token, the
            // records are saved a chunk at a time, and a restarted manager loads them. The manager that stops lets go
            // of its activities first, so that they are not held twice while the records are read and changed.
            manager = makeManager()
            let startedIds = Set(started.map(\.activityId))
            let policy = settings.activityPolicy
            var records = try await store.activities(matchId: Self.matchId).filter { startedIds.contains($0.activityId) }
            for index in records.indices {
                let token = SyntheticToken.make(for: "update:" + records[index].activityId)
                guard records[index].lifecycle.updateTokenRegistered(token, now: now(), policy: policy).isEmpty else {
                    throw CommandFailure("setup: activity \(records[index].activityId) would send on its update token")
                }
                records[index].updatedAt = now()
            }
            var start = 0
            while start < records.count {
                let end = min(start + 1024, records.count)
                try await store.saveActivities(Array(records[start..<end]))
                start = end
            }
            try await manager.restore()
            let sent = sink.takeStarted().count
            guard records.count == started.count, sent == 0 else {
                throw CommandFailure("setup: \(records.count) of \(started.count) update tokens saved, \(sent) starts again")
            }
        }
        setup.updateTokens = phase(options.addresses == nil
            ? "\(started.count) update tokens registered" : "no update tokens: \(started.count) activities active on their addresses")

        var rows: [Row] = []
        options.beforeTimedUpdates?()
        for index in 1...options.updates {
            clock.advance(by: 60)
            let snapshot = match.goal(at: now())
            sink.open()
            let cpuBefore = ProcessCPU.now()
            let startedAt = Date()
            let called = ContinuousClock.now
            let update = try await manager.ingest(snapshot, pollInterval: .seconds(5))
            let returned = ContinuousClock.now
            let window = sink.close()
            guard let update, !update.keyEvents.isEmpty else {
                throw CommandFailure("update \(index) was not taken as a key event")
            }
            let last = window.lastReturn ?? returned
            rows.append(Row(
                update: index, startedAt: startedAt, activities: n, deliveries: window.deliveries, failures: window.failures,
                build: (window.firstCall ?? returned) - called, fanOut: last - called, ingest: returned - called,
                cpuToLastByte: (window.cpuAtLastReturn ?? cpuBefore) - cpuBefore,
                payloadBytes: window.firstPayload?.bytes.count ?? 0, distinctPayloads: window.distinctPayloads,
                sinkCalls: window.calls, rss: ResidentMemory.current()))
            options.afterUpdate?(index, called)
        }
        return (setup, rows)
    }

    /// How many setup calls run at once.
    static let setupWidth = 16
    /// How many update tokens are reported at once (`--setup follow`).
    static let tokenWidth = 64

    /// `body` for every item, `width` at a time; the first error stops the rest.
    static func concurrently<Item: Sendable>(
        _ items: [Item], width: Int = setupWidth, _ body: @escaping @Sendable (Item) async throws -> Void
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            var next = items.startIndex
            while next < items.endIndex, next - items.startIndex < width {
                let item = items[next]
                group.addTask { try await body(item) }
                next += 1
            }
            while try await group.next() != nil {
                guard next < items.endIndex else { continue }
                let item = items[next]
                group.addTask { try await body(item) }
                next += 1
            }
        }
    }

    static func milliseconds(_ duration: Duration) -> String {
        String(format: "%.1f", duration.seconds * 1000)
    }
}

/// The benchmark's wall clock: virtual, moved on by hand, so every activity of one update gets the
/// same timestamp and stale-date (and so the same payload) however long the fan-out takes.
final class BenchClock: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date) { current = Mutex(start) }

    var now: Date { current.withLock { $0 } }

    func advance(by seconds: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(seconds) }
    }
}

extension FanoutBenchmark {
    /// The restore setup's activity ids, one per device in the order they are stored. All made at `made`, id order
    /// (the order a fan-out walks) is random against that order: the worst case for the memory it reads. In
    /// creation order, a millisecond apart, the earlier ones first, as a deployment's follows made over time are: id
    /// order is then the order they were stored in.
    static func activityIds(
        count: Int, madeAt made: Date, inCreationOrder: Bool, using rng: inout SeededGenerator
    ) -> [String] {
        let milliseconds = Int64(made.timeIntervalSince1970 * 1000)
        return (0..<count).map { index in
            let back = inCreationOrder ? Int64(count - 1 - index) : 0
            return Identifier.make(prefix: "act_", milliseconds: milliseconds - back, using: &rng)
        }
    }
}

/// The football match the benchmark's followers follow: kick-off, then a goal per update.
struct BenchMatch {
    let id: String
    private var seq = 0
    private var home = 0
    private var away = 0
    private var minute = 0
    private var events: [MatchEvent] = []

    init(id: String) { self.id = id }

    /// Before kick-off: what devices follow (`bench serve` serves it until the match goes live).
    mutating func scheduled(at now: Date, startsAt: Date) -> MatchSnapshot {
        snapshot(at: now, status: .scheduled, startsAt: startsAt)
    }

    mutating func kickOff(at now: Date) -> MatchSnapshot {
        minute = 1
        return snapshot(at: now)
    }

    /// A minute later, nothing else: a routine change (the clock), at priority 5. After 90 minutes the clock starts
    /// again at 1' (the benchmark's match never ends).
    mutating func minutePasses(at now: Date) -> MatchSnapshot {
        minute = minute % 90 + 1
        return snapshot(at: now)
    }

    /// The next goal, alternately home and away, eleven minutes after the last.
    mutating func goal(at now: Date) -> MatchSnapshot {
        minute += 11
        let homeScores = (home + away) % 2 == 0
        if homeScores { home += 1 } else { away += 1 }
        let scorer = homeScores ? "Bukayo Saka" : "Cole Palmer"
        events.append(MatchEvent(id: "goal-\(home + away)", type: "goal", at: now, text: "GOAL! \(scorer) \(minute)'"))
        return snapshot(at: now)
    }

    private mutating func snapshot(at now: Date, status: MatchStatus = .live, startsAt: Date? = nil) -> MatchSnapshot {
        seq += 1
        return MatchSnapshot(
            id: id, sport: .football, status: status, startsAt: startsAt ?? now, updatedAt: now, seq: seq,
            competition: "Premier League", venue: "Emirates Stadium",
            home: Team(id: "ars", name: "Arsenal", short: "ARS"), away: Team(id: "che", name: "Chelsea", short: "CHE"),
            score: .teamTotals(TeamScore(home: home, away: away, period: minute > 45 ? "2H" : "1H", clock: "\(minute)'")),
            events: Array(events.suffix(5)))
    }
}

/// A process's resident memory, from `/proc/<pid>/status` (zero where there is none).
struct ResidentMemory: Sendable {
    /// `VmRSS`, bytes.
    var current: Int
    /// `VmHWM`, the peak, bytes.
    var peak: Int
    /// `RssAnon`, bytes: the resident part of `current` that is the process's own memory (heap, stacks), without the
    /// pages of files it maps (its binary's code, which grows as more of the code runs, and is shared and reclaimable).
    var anonymous = 0

    /// This process's.
    static func current() -> ResidentMemory { of("self") }

    /// Gives the memory the allocator holds free back to the system (glibc's `malloc_trim(0)`, found at run time;
    /// nothing elsewhere): the RSS read afterwards is what the process's live blocks occupy, without the space
    /// that freed ones left between them.
    static func trimFreeMemory() {
        #if canImport(Glibc)
        typealias Trim = @convention(c) (Int) -> Int32
        guard let process = dlopen(nil, RTLD_NOW), let symbol = dlsym(process, "malloc_trim") else { return }
        _ = unsafeBitCast(symbol, to: Trim.self)(0)
        #endif
    }

    /// Another process's (a child).
    static func of(pid: Int32) -> ResidentMemory { of("\(pid)") }

    private static func of(_ process: String) -> ResidentMemory {
        guard let text = try? String(contentsOfFile: "/proc/\(process)/status", encoding: .utf8) else {
            return ResidentMemory(current: 0, peak: 0)
        }
        func kilobytes(_ key: String) -> Int {
            guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(key + ":") }) else { return 0 }
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return ResidentMemory(
            current: kilobytes("VmRSS") * 1024, peak: kilobytes("VmHWM") * 1024, anonymous: kilobytes("RssAnon") * 1024)
    }
}
