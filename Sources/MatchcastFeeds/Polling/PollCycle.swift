import Foundation
import MatchcastCore

/// A poll step driven over a transport, as `MatchSource` and `LiveListSource` drive theirs: the step, the
/// transport, the clock that says when the answer goes stale, wall-clock time for `Retry-After` dates, the
/// generator for jitter, and when the next poll is due.
///
/// A class, owned by the actor that drives it and never shared: reading a struct held in an actor's stored property
/// copied the whole cycle on every poll (the step's last snapshot with it, field by field), which a profile of 2,000
/// polled matches showed among serve's largest costs of its own.
final class PollCycle<Step: PollStep> {
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

    /// Sends the step's next request and takes in the answer (or the error that stands for one); the next poll is due
    /// after the delay the step decides. Runs where its caller, the owning actor, runs.
    nonisolated(nonsending) func poll() async throws -> PollResult<Step.Outcome> {
        let answer = try await transport.answer(step.nextRequest, path: step.path)
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
