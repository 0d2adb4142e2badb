import Foundation
import MatchcastCore

/// The live list, `GET {base}/live-matches`: polled always, at the interval the feed asks for.
///
/// All decisions are `LiveListPollState`'s (per-match seq guard, bad entries reported and skipped);
/// this actor drives it through a `PollCycle` (the transport, the clock, the random generator for jitter).
public actor LiveListSource: PollingDataSource {
    public typealias Value = [MatchSnapshot]
    public typealias Outcome = LiveListPollOutcome

    private var cycle: PollCycle<LiveListPollState>

    /// - Parameters:
    ///   - clock: measures when the cache goes stale; a manual clock in tests.
    ///   - seed: for jitter; by default a fixed value derived from the path.
    ///   - now: wall-clock time, for `Retry-After` HTTP-dates.
    public init(
        transport: any FeedTransport,
        clock: any Clock<Duration> = ContinuousClock(),
        policy: PollTimingPolicy = PollTimingPolicy(),
        seed: UInt64? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.cycle = PollCycle(
            LiveListPollState(policy: policy), transport: transport, clock: clock,
            seed: seed ?? SourceSeed.seed(for: FeedRequest.liveMatches.path), now: now)
    }

    /// The list as last accepted, without fetching.
    public var matches: [MatchSnapshot] { cycle.step.matches }

    /// Failures since the last good answer.
    public var consecutiveFailures: Int { cycle.step.consecutiveFailures }

    public func poll() async throws -> PollResult<LiveListPollOutcome> {
        try await cycle.poll()
    }

    public func load() async throws -> [MatchSnapshot] {
        if cycle.step.hasList, cycle.isFresh {
            return cycle.step.matches
        }
        return try await refresh()
    }

    /// Fetches now. A decoded list (even one with bad entries) or a 304 returns the list; a failure throws `FeedError`.
    public func refresh() async throws -> [MatchSnapshot] {
        switch try await poll().outcome {
        case .updated(let update): return update.matches
        case .unchanged: return cycle.step.matches
        case .failed(let error): throw error
        }
    }

    /// Always: the live list is how new matches are discovered.
    public func shouldPoll() -> Bool { true }

    public func nextPollDelay() -> Duration {
        cycle.untilDue
    }
}
