import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds

/// One match followed by one synthetic device, as `matchcast follow` shows it: the same chain the
/// broker runs for every activity (tracker → lifecycle → delivery builder → sink), with a device that
/// reports its update token as soon as the activity starts.
public actor FollowSession {
    public nonisolated let matchId: String
    private let sink: any DeliverySink
    private let policy: ActivityPolicy
    private let now: @Sendable () -> Date
    private let report: @Sendable (String) -> Void
    private var tracker = MatchTracker()
    private var lifecycle: ActivityLifecycle
    private var builder: DeliveryBuilder
    /// The synthetic device's tokens: stable per match so runs are comparable.
    public nonisolated let pushToStartToken: String
    public nonisolated let updateToken: String
    /// True once the activity has ended (its `end` was delivered) or cannot start.
    public private(set) var isFinished = false
    public private(set) var deliveriesSent = 0

    /// - Parameters:
    ///   - seed: makes activity and delivery ids reproducible.
    ///   - report: where human-readable problems go (stderr in the CLI).
    public init(
        matchId: String, sink: any DeliverySink, policy: ActivityPolicy, bundleId: String, seed: UInt64,
        now: @escaping @Sendable () -> Date = { Date() }, report: @escaping @Sendable (String) -> Void
    ) {
        self.matchId = matchId
        self.sink = sink
        self.policy = policy
        self.now = now
        self.report = report
        var builder = DeliveryBuilder(bundleId: bundleId, seed: seed)
        lifecycle = ActivityLifecycle(activityId: builder.makeActivityId(now: now()), matchId: matchId)
        self.builder = builder
        pushToStartToken = SyntheticToken.make(for: "push-to-start:" + matchId)
        updateToken = SyntheticToken.make(for: "update:" + matchId)
    }

    /// Takes one poll's result: renders a new snapshot, runs the lifecycle, delivers what it decides.
    public func handle(_ result: PollResult<MatchPollOutcome>) async throws {
        switch result.outcome {
        case .updated(let snapshot):
            do {
                if let update = try tracker.ingest(snapshot, pollInterval: result.delay) {
                    try await execute(lifecycle.matchChanged(update, now: now(), policy: policy))
                    if lifecycle.phase == .waiting, update.status.isFinal || update.status == .postponed {
                        report("match \(matchId) is \(update.status.rawValue): nothing to follow")
                    }
                }
            } catch let error as InputError {
                report("match \(matchId): \(error) (snapshot skipped)")
            }
        case .unchanged, .stale:
            break
        case .failed(let error):
            report("feed: \(error); retrying in \(Self.format(result.delay))")
        }
        let fresh: Bool = if case .failed = result.outcome { false } else { true }
        try await execute(lifecycle.tick(now: now(), policy: policy, feedIsFresh: fresh))
    }

    private func execute(_ actions: [ActivityAction]) async throws {
        for action in actions {
            switch action {
            case .send(let intent):
                let delivery: Delivery?
                do {
                    delivery = try builder.build(
                        intent, matchId: matchId, activityId: lifecycle.activityId,
                        pushToStartToken: pushToStartToken, now: now())
                } catch {
                    report("match \(matchId): \(error)")
                    continue
                }
                guard let delivery else { continue }
                try await sink.deliver([delivery])
                deliveriesSent += 1
                if intent.aps.event == .start {
                    try await execute(lifecycle.updateTokenRegistered(updateToken, now: now(), policy: policy))
                }
            case .finished:
                isFinished = true
            case .restart:
                lifecycle = ActivityLifecycle(activityId: builder.makeActivityId(now: now()), matchId: matchId)
                if let latest = tracker.latest {
                    try await execute(lifecycle.matchChanged(latest, now: now(), policy: policy))
                }
            }
        }
    }

    static func format(_ duration: Duration) -> String {
        String(format: "%.1fs", duration.seconds)
    }
}

/// Deterministic 64-hex-digit stand-ins for device tokens (FNV-1a, extended), for synthetic followers.
public enum SyntheticToken {
    public static func make(for seed: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in seed.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
        }
        var rng = SeededGenerator(seed: hash)
        return (0..<4).map { _ in
            let value = rng.next()
            let hex = String(value, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}
