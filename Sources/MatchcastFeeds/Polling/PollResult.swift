/// What one poll step produced and how long to wait before the next one.
public struct PollResult<Outcome: Sendable>: Sendable {
    public var outcome: Outcome
    /// The delay before the next poll, already clamped and jittered.
    public var delay: Duration

    public init(outcome: Outcome, delay: Duration) {
        self.outcome = outcome
        self.delay = delay
    }
}

extension PollResult: Equatable where Outcome: Equatable {}
extension PollResult: Hashable where Outcome: Hashable {}
