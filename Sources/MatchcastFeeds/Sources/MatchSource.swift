import Foundation
import MatchcastCore

/// One match, `GET {base}/matches/{id}`: keeps the newest snapshot, polls until the match is final.
///
/// All decisions are `MatchPollState`'s; this actor adds the transport, the clock that says when the
/// cache is fresh and the random generator for jitter. Concurrent refreshes are not coalesced: each
/// fetches, and the seq guard keeps the newest answer whichever lands last.
public actor MatchSource: PollingDataSource {
    public typealias Value = MatchSnapshot
    public typealias Outcome = MatchPollOutcome

    public nonisolated let matchId: String
    private var state: MatchPollState
    private let transport: any FeedTransport
    private let elapsed: ElapsedTime
    private let wallClock: @Sendable () -> Date
    private var rng: SeededGenerator
    /// Elapsed time at which the next poll is due; nil before the first.
    private var due: Duration?

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
        self.state = MatchPollState(matchId: matchId, policy: policy)
        self.transport = transport
        self.elapsed = ElapsedTime(clock)
        self.wallClock = now
        self.rng = SeededGenerator(seed: seed ?? SourceSeed.seed(for: "/matches/" + matchId))
    }

    /// The newest snapshot accepted, without fetching.
    public var snapshot: MatchSnapshot? { state.snapshot }

    /// Failures since the last good answer.
    public var consecutiveFailures: Int { state.consecutiveFailures }

    public func poll() async throws -> PollResult<MatchPollOutcome> {
        let answer = try await transport.answer(state.nextRequest, path: state.path)
        let result = state.take(answer, now: wallClock(), using: &rng)
        due = elapsed.now + result.delay
        return result
    }

    public func load() async throws -> MatchSnapshot {
        if let snapshot = state.snapshot, let due, elapsed.now < due {
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
            guard let snapshot = state.snapshot else { throw FeedError.status(304, path: state.path) }
            return snapshot
        case .failed(let error):
            throw error
        }
    }

    public func shouldPoll() -> Bool {
        !state.isFinal
    }

    public func nextPollDelay() -> Duration {
        guard let due else { return .zero }
        return max(.zero, due - elapsed.now)
    }
}
