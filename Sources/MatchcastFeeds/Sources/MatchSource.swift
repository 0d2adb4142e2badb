import Foundation
import MatchcastCore

/// One match, `GET {base}/matches/{id}`: keeps the newest snapshot, polls until the match is final.
///
/// All decisions are `MatchPollState`'s; this actor drives it through a `PollCycle` (the transport, the clock that
/// says when the cache is fresh, the random generator for jitter). Concurrent refreshes are not coalesced: each
/// fetches, and the seq guard keeps the newest answer whichever lands last.
public actor MatchSource: PollingDataSource {
    public typealias Value = MatchSnapshot
    public typealias Outcome = MatchPollOutcome

    public nonisolated let matchId: String
    private var cycle: PollCycle<MatchPollState>

    /// - Parameters:
    ///   - clock: measures when the cache goes stale; a manual clock in tests.
    ///   - seed: for jitter; by default derived from the match id, so matches do not poll in lockstep.
    ///   - now: wall-clock time, for `Retry-After` HTTP-dates.
    public init(
        matchId: String,
        transport: any FeedTransport,
        clock: any Clock<Duration> = ContinuousClock(),
        policy: PollTimingPolicy = PollTimingPolicy(),
        seed: UInt64? = nil,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.matchId = matchId
        self.cycle = PollCycle(
            MatchPollState(matchId: matchId, policy: policy), transport: transport, clock: clock,
            seed: seed ?? SourceSeed.seed(for: "/matches/" + matchId), now: now)
    }

    /// The newest snapshot accepted, without fetching.
    public var snapshot: MatchSnapshot? { cycle.step.snapshot }

    /// Failures since the last good answer.
    public var consecutiveFailures: Int { cycle.step.consecutiveFailures }

    public func poll() async throws -> PollResult<MatchPollOutcome> {
        try await cycle.poll()
    }

    public func load() async throws -> MatchSnapshot {
        if let snapshot = cycle.step.snapshot, cycle.isFresh {
            return snapshot
        }
        return try await refresh()
    }

    /// Fetches now. An unchanged or stale answer returns the cached snapshot; a failure throws `FeedError`.
    public func refresh() async throws -> MatchSnapshot {
        switch try await poll().outcome {
        case .updated(let snapshot):
            return snapshot
        case .unchanged, .stale:
            // Both outcomes need a cached snapshot: a 304 without one is a failure, and stale needs a newer seq held.
            guard let snapshot = cycle.step.snapshot else { throw FeedError.status(304, path: cycle.step.path) }
            return snapshot
        case .failed(let error):
            throw error
        }
    }

    public func shouldPoll() -> Bool {
        !cycle.step.isFinal
    }

    public func nextPollDelay() -> Duration {
        cycle.untilDue
    }
}
