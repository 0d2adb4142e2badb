import Foundation

/// A poll step (match, live list, schedule): what it asks for next, and what an answer, or none, means.
public protocol PollStep: Sendable {
    associatedtype Outcome: PollOutcome
    /// The next request, with the conditional headers for what is cached.
    var nextRequest: FeedRequest { get }
    /// The path every error of this step names.
    var path: String { get }
    mutating func ingest(_ response: FeedResponse, now: Date, using rng: inout some RandomNumberGenerator) -> PollResult<Outcome>
    mutating func ingest(failure error: FeedError, now: Date, using rng: inout some RandomNumberGenerator) -> PollResult<Outcome>
}

extension PollStep {
    /// Takes in what the transport gave for `nextRequest`: an answer, or the error that stood for one.
    public mutating func take(
        _ answer: Result<FeedResponse, FeedError>, now: Date, using rng: inout some RandomNumberGenerator
    ) -> PollResult<Outcome> {
        switch answer {
        case .success(let response): ingest(response, now: now, using: &rng)
        case .failure(let error): ingest(failure: error, now: now, using: &rng)
        }
    }
}

/// A poll step timed by a `PollPacer`: the validators, the feed's interval and the backoff are the pacer's, the
/// same for every step; what an answer means is the step's own.
public protocol PacedPollStep: PollStep {
    var pacer: PollPacer { get set }
}

extension PacedPollStep {
    public var policy: PollTimingPolicy {
        get { pacer.policy }
        set { pacer.policy = newValue }
    }

    /// The validators the next request will carry.
    public var conditional: ConditionalRequestState { pacer.conditional }

    /// Failures since the last good answer; drives the backoff.
    public var consecutiveFailures: Int { pacer.consecutiveFailures }

    /// `base` with the conditional headers for what is cached.
    public func prepare(_ base: FeedRequest) -> FeedRequest {
        pacer.conditional.apply(to: base)
    }

    /// Takes in a request that got no answer at all (the transport threw).
    public mutating func ingest(
        failure error: FeedError, now: Date, using rng: inout some RandomNumberGenerator
    ) -> PollResult<Outcome> {
        pacer.failure(error, response: nil, now: now, using: &rng)
    }
}

extension MatchPollState: PacedPollStep {}
extension LiveListPollState: PacedPollStep {}
extension SchedulePollState: PacedPollStep {}
