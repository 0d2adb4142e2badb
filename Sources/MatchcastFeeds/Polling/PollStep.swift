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

extension MatchPollState: PollStep {}
extension LiveListPollState: PollStep {}
extension SchedulePollState: PollStep {}
