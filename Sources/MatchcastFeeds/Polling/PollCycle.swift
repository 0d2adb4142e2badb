import Foundation
import MatchcastCore

/// A poll step driven over a transport, as `MatchSource` and `LiveListSource` drive theirs: the step, the
/// transport, the clock that says when the answer goes stale, wall-clock time for `Retry-After` dates, the
/// generator for jitter, and when the next poll is due.
struct PollCycle<Step: PollStep>: Sendable {
    private(set) var step: Step
    private let transport: any FeedTransport
    private let elapsed: ElapsedTime
    private let wallClock: @Sendable () -> Date
    private var rng: SeededGenerator
    /// Elapsed time at which the next poll is due; nil before the first.
    private var due: Duration?

    init(
        _ step: Step, transport: any FeedTransport, clock: any Clock<Duration>, seed: UInt64,
        now: @escaping @Sendable () -> Date
    ) {
        self.step = step
        self.transport = transport
        self.elapsed = ElapsedTime(clock)
        self.wallClock = now
        self.rng = SeededGenerator(seed: seed)
    }

    /// What the next poll sends and over what. Read before the request goes, so that the owning actor does not hold
    /// a copy of the whole cycle (the step's snapshot with it) across the request, as an async method on it would.
    var next: (transport: any FeedTransport, request: FeedRequest, path: String) {
        (transport, step.nextRequest, step.path)
    }

    /// Takes in the transport's answer to `next`; the next poll is due after the delay the step decides.
    mutating func take(_ answer: Result<FeedResponse, FeedError>) -> PollResult<Step.Outcome> {
        let result = step.take(answer, now: wallClock(), using: &rng)
        due = elapsed.now + result.delay
        return result
    }

    /// Whether a poll has been made and its next one is not due yet.
    var isFresh: Bool { due.map { elapsed.now < $0 } ?? false }

    /// How long until the next poll is due: zero before the first and once it is due.
    var untilDue: Duration {
        guard let due else { return .zero }
        return max(.zero, due - elapsed.now)
    }
}
