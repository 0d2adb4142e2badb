import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds

/// One match followed by one synthetic device, as `matchcast follow` shows it: the same chain the
/// broker runs for every activity (tracker → lifecycle → delivery builder → sink), with a device that
/// reports its update token as soon as the activity starts.
public actor FollowSession {
    /// How updates reach the activity.
    public enum UpdateRoute: Sendable, Hashable {
        /// A synthetic device that reports `updateToken` right after the start (the printing sinks).
        case synthetic
        /// An activity the app started itself, with this update token: no start, updates and end go to it.
        case updateToken(String)
        /// A broadcast channel (iOS 18): the start names it (`input-push-channel`), updates and end are
        /// broadcast on it.
        case channel(String)
    }

    public nonisolated let matchId: String
    public nonisolated let route: UpdateRoute
    private let sink: any DeliverySink
    private let policy: ActivityPolicy
    private let now: @Sendable () -> Date
    private let report: @Sendable (String) -> Void
    private var tracker = MatchTracker()
    private var lifecycle: ActivityLifecycle
    private var builder: DeliveryBuilder
    /// Channel route: the synthetic activity whose pushes are the channel's broadcasts (as `MatchChannel`),
    /// fed from the device's start on.
    private var channel: ActivityLifecycle?
    private var channelFinished = false
    /// The synthetic device's tokens: stable per match so runs are comparable.
    public nonisolated let pushToStartToken: String
    public nonisolated let updateToken: String
    /// True once the activity has ended (its `end` was delivered) or cannot start.
    public private(set) var isFinished = false
    public private(set) var deliveriesSent = 0
    /// A poll's handling and a stop run one at a time: a stop (Ctrl-C) that came while the start was on its way
    /// would otherwise find no channel yet and end nothing.
    private let serial = AsyncSerialGate()

    /// - Parameters:
    ///   - seed: makes activity and delivery ids reproducible.
    ///   - report: where human-readable problems go (stderr in the CLI).
    ///   - pushToStartToken: the device's push-to-start token; a synthetic one by default.
    ///   - route: how updates reach the activity.
    public init(
        matchId: String, sink: any DeliverySink, policy: ActivityPolicy, bundleId: String, seed: UInt64,
        pushToStartToken: String? = nil, route: UpdateRoute = .synthetic,
        now: @escaping @Sendable () -> Date = { Date() }, report: @escaping @Sendable (String) -> Void
    ) {
        self.matchId = matchId
        self.route = route
        self.sink = sink
        self.policy = policy
        self.now = now
        self.report = report
        var builder = DeliveryBuilder(bundleId: bundleId, seed: seed)
        lifecycle = ActivityLifecycle(activityId: builder.makeActivityId(now: now()), matchId: matchId)
        self.builder = builder
        self.pushToStartToken = pushToStartToken ?? SyntheticToken.make(for: "push-to-start:" + matchId)
        switch route {
        case .synthetic, .channel:
            updateToken = SyntheticToken.make(for: "update:" + matchId)
        case .updateToken(let token):
            updateToken = token
            // The app started the activity: adopt it (no start is sent).
            _ = lifecycle.updateTokenRegistered(token, now: now(), policy: policy)
        }
    }

    /// The activity ends before the match does (Ctrl-C): an `end` dismissed at once goes to its update token
    /// or channel, when it was started. Returns when it was delivered.
    public func stop() async throws {
        await serial.enter()
        defer { serial.leave() }
        guard !isFinished || (channel != nil && !channelFinished) else { return }
        try await execute(lifecycle.end(.unfollowed, now: now()))
        try await endChannel(.unfollowed)
        isFinished = true
    }

    /// APNs called `token` dead (410, `BadDeviceToken`): nothing more can reach the activity; it is over.
    /// Returns whether the token was this session's.
    @discardableResult
    public func tokenRejected(_ token: String) async throws -> Bool {
        guard token == updateToken || token == pushToStartToken else { return false }
        try await execute(lifecycle.end(.tokenInvalid, now: now()))
        channelFinished = true
        isFinished = true
        return true
    }

    private func endChannel(_ reason: ActivityEndReason) async throws {
        guard var channel, !channelFinished else { return }
        let actions = channel.end(reason, now: now())
        self.channel = channel
        try await executeChannel(actions)
        channelFinished = true
    }

    /// The synthetic channel activity's actions: its sends go to the channel.
    private func executeChannel(_ actions: [ActivityAction]) async throws {
        guard case .channel(let channelId) = route, let activityId = channel?.activityId else { return }
        for action in actions {
            switch action {
            case .send(var intent):
                intent.recipient = .channel(channelId)
                guard let delivery = try? builder.build(
                    intent, matchId: matchId, activityId: activityId, pushToStartToken: nil, now: now())
                else { continue }
                try await sink.deliver([delivery])
                deliveriesSent += 1
            case .finished:
                channelFinished = true
            case .restart:
                break
            }
        }
    }

    /// The channel's policy: a device's, without the 8-hour restart (as `MatchChannel`).
    private var channelPolicy: ActivityPolicy {
        var policy = policy
        policy.restartAfter = .seconds(100 * 365 * 86_400)
        return policy
    }

    /// Whether the whole session is done: the activity and, on the channel route, its channel's end.
    public var isDone: Bool { isFinished && (channel == nil || channelFinished) }

    /// Takes one poll's result: renders a new snapshot, runs the lifecycle, delivers what it decides.
    public func handle(_ result: PollResult<MatchPollOutcome>) async throws {
        await serial.enter()
        defer { serial.leave() }
        switch result.outcome {
        case .updated(let snapshot):
            do {
                if var update = try tracker.ingest(
                    snapshot, pollInterval: result.delay, at: now(), highPriorityPerHour: policy.highPriorityPerHour
                ) {
                    if case .channel(let channelId) = route { update.channelId = channelId }
                    if var channel, !channelFinished {
                        let actions = channel.matchChanged(update, now: now(), policy: channelPolicy)
                        self.channel = channel
                        try await executeChannel(actions)
                    }
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
        if var channel, !channelFinished {
            let actions = channel.tick(now: now(), policy: channelPolicy, feedIsFresh: fresh)
            self.channel = channel
            try await executeChannel(actions)
        }
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
                if intent.aps.event == .start, case .channel(let channelId) = route, channel == nil {
                    // The start names the channel, so the channel carries the match from the moment the start may
                    // reach the phone: a send that fails or is cancelled (Ctrl-C) after APNs took it must still leave
                    // a channel for `stop` to end.
                    adoptChannel(channelId)
                }
                try await sink.deliver([delivery])
                deliveriesSent += 1
                if intent.aps.event == .start, case .synthetic = route {
                    try await execute(lifecycle.updateTokenRegistered(updateToken, now: now(), policy: policy))
                }
            case .finished:
                isFinished = true
            case .restart:
                lifecycle = ActivityLifecycle(activityId: builder.makeActivityId(now: now()), matchId: matchId)
                if var latest = tracker.latest {
                    if case .channel(let channelId) = route { latest.channelId = channelId }
                    try await execute(lifecycle.matchChanged(latest, now: now(), policy: policy))
                }
            }
        }
    }

    /// The channel's own activity, adopted showing what the start shows (the match's latest state, no key event).
    private func adoptChannel(_ channelId: String) {
        var channel = ActivityLifecycle.adopted(
            activityId: builder.makeActivityId(now: now()), matchId: matchId, updateToken: channelId, now: now())
        if let latest = tracker.latest {
            var quiet = latest
            quiet.keyEvents = []
            _ = channel.matchChanged(quiet, now: now(), policy: channelPolicy)
        }
        self.channel = channel
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
        // Four values, each as 16 digits, most significant first: their big-endian bytes in hex. Written straight into
        // a string of 64 bytes, as a token decoded from a request holds (a replay or a benchmark keeps 100,000s).
        let values = (rng.next().bigEndian, rng.next().bigEndian, rng.next().bigEndian, rng.next().bigEndian)
        return withUnsafeBytes(of: values) { Hex.lowercase($0, count: 32) }
    }
}
