import Foundation
import MatchcastCore

/// The live list, `GET {base}/live-matches`: polled always, at the interval the feed asks for.
///
/// All decisions are `LiveListPollState`'s (per-match seq guard, bad entries reported and skipped);
/// this actor adds the transport, the clock and the random generator for jitter.
public actor LiveListSource: PollingDataSource {
    public typealias Value = [MatchSnapshot]
    public typealias Outcome = LiveListPollOutcome

    private var state: LiveListPollState
    private let transport: any FeedTransport
    private let elapsed: ElapsedTime
    private let wallClock: @Sendable () -> Date
    private var rng: SeededGenerator
    private var due: Duration?

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
        self.state = LiveListPollState(policy: policy)
        self.transport = transport
        self.elapsed = ElapsedTime(clock)
        self.wallClock = now
        self.rng = SeededGenerator(seed: seed ?? SourceSeed.seed(for: FeedRequest.liveMatches.path))
    }

    /// The list as last accepted, without fetching.
    public var matches: [MatchSnapshot] { state.matches }

    /// Failures since the last good answer.
    public var consecutiveFailures: Int { state.consecutiveFailures }

    public func poll() async throws -> PollResult<LiveListPollOutcome> {
        let answer = try await transport.answer(state.nextRequest, path: state.path)
        let result = state.take(answer, now: wallClock(), using: &rng)
        due = elapsed.now + result.delay
        return result
    }

    public func load() async throws -> [MatchSnapshot] {
        if state.hasList, let due, elapsed.now < due {
            return state.matches
        }
        return try await refresh()
    }

    /// Fetches now. A decoded list (even one with bad entries) or a 304 returns the list; a failure throws `FeedError`.
    public func refresh() async throws -> [MatchSnapshot] {
        switch try await poll().outcome {
        case .updated(let update): return update.matches
        case .unchanged: return state.matches
        case .failed(let error): throw error
        }
    }

    /// Always: the live list is how new matches are discovered.
    public func shouldPoll() -> Bool { true }

    public func nextPollDelay() -> Duration {
        guard let due else { return .zero }
        return max(.zero, due - elapsed.now)
    }
}
