import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastStore
import Metrics
import Synchronization

/// Replays a recording through the broker's own pipeline on a virtual clock: each observation goes
/// through the feed's poll step (`MatchPollState`: status, seq guard, 304s, timing), then
/// `LifecycleManager` fans it out to the synthetic followers' activities, coalescing and timing
/// them with ticks at the virtual times they fall due. One task does everything in order, so the
/// same recording and options give the same output bytes on every run.
public struct ReplayRunner: Sendable {
    private let lines: [RecordingLine]
    private let options: ReplayOptions
    private let sinks: [any DeliverySink]
    private let logger: Logger
    private let deadTokens: DeadTokenInbox?

    /// Batches a replay's stdout sink may leave to be written while the next observation is worked out
    /// (`StdoutSink(writeBehind:)`): the fan-out of one update overlaps the writing of the one before. Written in order
    /// all the same, so the output is the same bytes; the replay waits for the last write, and fails on a failed one.
    public static let stdoutWriteBehind = 4

    /// Virtual time 0 of every replay: whatever the recording, the output does not depend on when it runs.
    public static let epoch = Date(timeIntervalSince1970: 1_767_225_600)  // 2026-01-01T00:00:00Z

    /// - Parameter deadTokens: where the sinks report dead tokens (the APNs sink's `onInvalidToken`); the
    ///   replay applies them as the broker does: a dead update token ends its activity, a dead
    ///   push-to-start token is forgotten (its start never reached the device, so no update token is
    ///   reported for it), and nothing more is sent to either.
    public init(
        lines: [RecordingLine], options: ReplayOptions, sinks: [any DeliverySink], logger: Logger, deadTokens: DeadTokenInbox? = nil
    ) {
        self.lines = lines
        self.options = options
        self.sinks = sinks
        self.logger = logger
        self.deadTokens = deadTokens
    }

    public func run(progress: @Sendable (ReplayProgress) -> Void = { _ in }) async throws -> ReplaySummary {
        let wallStart = ContinuousClock.now
        let clock = VirtualTime(Self.epoch)
        let now: @Sendable () -> Date = { clock.now }
        // Nothing reads a replay's deliveries back from its store: they are not queued there at all. Nor what its
        // activities show: the lifecycle loads each match's activities once, and a failed save ends the replay.
        let store = InMemoryStore(keepsOutbox: false, keepsActivityContent: false)
        // Beside the real sinks, not around them: the dispatcher retries only a sink that failed a batch, so the others
        // (this one included) take each batch once.
        let counter = CountingSink()
        let metrics = BrokerMetrics(factory: NOOPMetricsHandler.instance)
        let manager = LifecycleManager(
            store: store, dispatcher: DeliveryDispatcher(sinks: sinks + [counter], metrics: metrics, logger: logger),
            settings: BrokerSettings(bundleId: options.bundleId, activityPolicy: options.policy, seed: options.seed),
            metrics: metrics, now: now, logger: logger)

        let matchIds = Self.matchIds(in: lines)
        try await Self.addFollowers(options.followers, of: matchIds, store: store, manager: manager, now: now)

        var summary = ReplaySummary()
        var polls: [String: MatchPollState] = [:]
        var rng = SeededGenerator(seed: options.seed)
        var nextTick: Date?
        var previousT = 0.0
        for (index, line) in lines.enumerated() {
            let at = Self.epoch.addingTimeInterval(line.t)
            // Everything due before this observation happens first, at its own virtual time.
            while let due = nextTick, due <= at {
                clock.set(due)
                nextTick = try await manager.tick()
                try await registerStartedActivities(counter, store: store, manager: manager)
            }
            if let speed = options.speed, line.t > previousT {
                try await Task.sleep(for: .milliseconds(Int64((line.t - previousT) / speed * 1000)))
            }
            previousT = line.t
            clock.set(at)
            summary.observations += 1
            if let matchId = Self.matchId(ofRequest: line.request) {
                var state = polls[matchId] ?? MatchPollState(matchId: matchId, policy: PollTimingPolicy(jitter: 0))
                let result = state.ingest(line.response, now: at, using: &rng)
                polls[matchId] = state
                switch result.outcome {
                case .updated(let snapshot):
                    if let update = try await manager.ingest(snapshot, pollInterval: result.delay) {
                        for event in update.keyEvents { summary.keyEvents[event.kind, default: 0] += 1 }
                        if let result = update.content.result { summary.results[matchId] = result }
                    }
                case .unchanged:
                    manager.feedAnswered(matchId: matchId)
                case .stale:
                    break
                case .failed(let error):
                    logger.warning("observation not usable", metadata: ["line": "\(index + 1)", "error": "\(error)"])
                }
            }
            try await registerStartedActivities(counter, store: store, manager: manager)
            nextTick = try await manager.tick()
            try await registerStartedActivities(counter, store: store, manager: manager)
            progress(ReplayProgress(done: index + 1, total: lines.count, simulatedSeconds: line.t, deliveries: counter.total))
        }
        // Coalesced updates still held when the recording ends go out at their due time.
        let end = Self.epoch.addingTimeInterval((lines.last?.t ?? 0) + options.policy.coalesceInterval.seconds)
        while let due = nextTick, due <= end {
            clock.set(due)
            nextTick = try await manager.tick()
            try await registerStartedActivities(counter, store: store, manager: manager)
        }
        // Everything handed to the sinks has left (a sink that writes behind reports a failed write here), and the
        // relay holds nothing back: a delivery no sink took fails the replay, never only a log line.
        for sink in sinks { try await sink.flush() }
        let undelivered = await manager.relay.undelivered
        guard undelivered == 0 else { throw ReplayError.undelivered(undelivered) }
        summary.deliveriesByEvent = counter.byEvent
        summary.alerts = counter.alerts
        summary.simulatedSeconds = lines.last?.t ?? 0
        summary.wallSeconds = (ContinuousClock.now - wallStart).seconds
        return summary
    }

    /// The app side of each synthetic follower: it reports the update token of every activity the
    /// broker started for it, right after the start. First, the dead tokens the sinks reported since the
    /// last step are applied (the broker's `POST /v1/feedback` path).
    private func registerStartedActivities(
        _ counter: CountingSink, store: InMemoryStore, manager: LifecycleManager
    ) async throws {
        var deadPushToStart: Set<String> = []
        for report in deadTokens?.take() ?? [] {
            if try await manager.invalidate(updateToken: report.token) { continue }
            if let deviceId = await store.removePushToStartToken(token: report.token) {
                deadPushToStart.insert(report.token)
                try await manager.pushToStartTokenRejected(deviceId: deviceId)
            }
        }
        for started in counter.takeStarted() {
            // A start APNs refused never reached the device: no app reports an update token for it.
            guard !deadPushToStart.contains(started.token), !(deadTokens?.isDead(started.token) ?? false) else { continue }
            guard let record = await store.activity(id: started.activityId) else { continue }
            _ = try await manager.registerUpdateToken(
                activityId: started.activityId, deviceId: record.deviceId, matchId: started.matchId,
                token: SyntheticToken.make(for: "update:" + started.activityId), environment: .production)
        }
    }

    private static func addFollowers(
        _ count: Int, of matchIds: [String], store: InMemoryStore, manager: LifecycleManager, now: @Sendable () -> Date
    ) async throws {
        for index in 0..<count {
            let deviceId = String(format: "replay-device-%06d", index)
            try await store.createDevice(DeviceRecord(id: deviceId, secretHash: "", createdAt: now()))
            try await store.setPushToStartToken(PushToStartTokenRecord(
                deviceId: deviceId, token: SyntheticToken.make(for: "push-to-start:" + deviceId),
                environment: .production, updatedAt: now()))
            for matchId in matchIds {
                _ = try await store.addFollow(FollowRecord(deviceId: deviceId, matchId: matchId, createdAt: now()))
                try await manager.follow(deviceId: deviceId, matchId: matchId, environment: .production)
            }
        }
    }

    static func matchIds(in lines: [RecordingLine]) -> [String] {
        var seen: [String] = []
        for line in lines {
            if let id = matchId(ofRequest: line.request), !seen.contains(id) { seen.append(id) }
        }
        return seen
    }

    static func matchId(ofRequest request: String) -> String? {
        guard request.hasPrefix("/matches/") else { return nil }
        let raw = request.dropFirst("/matches/".count).prefix { $0 != "?" }
        return String(raw).removingPercentEncoding ?? String(raw)
    }
}

/// A replay that could not deliver everything it made.
public enum ReplayError: Error, CustomStringConvertible {
    /// Deliveries no sink took by the end: a sink kept failing (its errors were logged as they happened).
    case undelivered(Int)

    public var description: String {
        switch self {
        case .undelivered(let count): "\(count) deliveries were never delivered: a sink kept failing (its errors are above)"
        }
    }
}

/// The replay's virtual wall clock.
final class VirtualTime: Sendable {
    private let current: Mutex<Date>

    init(_ start: Date) { current = Mutex(start) }

    var now: Date { current.withLock { $0 } }
    func set(_ date: Date) { current.withLock { $0 = max($0, date) } }
}

/// A sink beside the real ones that counts the deliveries and notes each started activity. It never fails, so the
/// relay hands it each batch once, however often a real sink needs the batch again.
final class CountingSink: DeliverySink, Sendable {
    let name = "replay"
    private let state = Mutex<(byEvent: [ActivityEvent: Int], alerts: Int, started: [(activityId: String, matchId: String, token: String)])>(([:], 0, []))

    func deliver(_ batch: [Delivery]) async throws {
        state.withLock { state in
            // Each delivery is read in place (a span, and `commonIdentity` inlinable: no copy of it per delivery). The
            // deliveries of one update share their payload: it is looked at once per run of them, not per delivery.
            let deliveries = batch.span
            var start = 0
            while start < deliveries.count {
                let common = deliveries[start].commonIdentity
                var end = start + 1
                while end < deliveries.count, deliveries[end].commonIdentity == common { end += 1 }
                let aps = deliveries[start].payload.aps
                state.byEvent[aps.event, default: 0] += end - start
                if aps.alert != nil { state.alerts += end - start }
                if aps.event == .start {
                    for index in start..<end {
                        state.started.append((deliveries[index].activityId, deliveries[index].matchId, deliveries[index].target.value))
                    }
                }
                start = end
            }
        }
    }

    var byEvent: [ActivityEvent: Int] { state.withLock { $0.byEvent } }
    var alerts: Int { state.withLock { $0.alerts } }
    var total: Int { state.withLock { $0.byEvent.values.reduce(0, +) } }

    func takeStarted() -> [(activityId: String, matchId: String, token: String)] {
        state.withLock { state in
            defer { state.started.removeAll() }
            return state.started
        }
    }
}

/// Dead-token reports from the sinks (`APNsSink`'s `onInvalidToken`), kept until the replay applies
/// them between two steps (never from inside a delivery, where the lifecycle manager is busy).
public final class DeadTokenInbox: Sendable {
    public struct Report: Sendable, Hashable {
        public var token: String
        public var reason: String
    }

    private let state = Mutex<(pending: [Report], dead: Set<String>)>(([], []))

    public init() {}

    /// For the sink's `onInvalidToken`.
    public var report: @Sendable (_ token: String, _ reason: String) async -> Void {
        { [self] token, reason in
            state.withLock { state in
                if state.dead.insert(token).inserted { state.pending.append(Report(token: token, reason: reason)) }
            }
        }
    }

    /// Whether `token` was reported dead.
    public func isDead(_ token: String) -> Bool { state.withLock { $0.dead.contains(token) } }

    /// Every token reported dead so far.
    public var deadCount: Int { state.withLock { $0.dead.count } }

    /// Whether reports wait to be taken.
    public var hasPending: Bool { state.withLock { !$0.pending.isEmpty } }

    /// The reports since the last call, each token once.
    public func take() -> [Report] {
        state.withLock { state in
            defer { state.pending.removeAll() }
            return state.pending
        }
    }
}
