import Foundation

/// The timing half of every poll step: validators, the last interval the feed asked for, failures in a row.
///
/// Kept apart from what a step decodes so the match, list and schedule steps pace themselves identically. Public only
/// as `PacedPollStep`'s requirement: its workings are this module's own.
public struct PollPacer: Sendable {
    var policy: PollTimingPolicy
    var conditional = ConditionalRequestState()
    /// What the last good response asked for (nil: it asked for nothing); a bare 304 falls back to it.
    private(set) var lastRequested: Duration?
    private(set) var consecutiveFailures = 0

    init(policy: PollTimingPolicy) {
        self.policy = policy
    }

    /// A 200 whose body decoded, or a 304: validators kept, failures forgotten, the feed's interval used.
    mutating func succeeded(
        _ response: FeedResponse, bodyRetryAfterMs: Int?, now: Date, using rng: inout some RandomNumberGenerator
    ) -> Duration {
        conditional.record(response)
        consecutiveFailures = 0
        let requested = policy.requestedInterval(for: response, bodyRetryAfterMs: bodyRetryAfterMs, now: now)
        if response.status != 304 || requested != nil {
            lastRequested = requested
        }
        return policy.jittered(policy.clamped(lastRequested ?? policy.defaultInterval), using: &rng)
    }

    /// Like `succeeded`, but the delay is decided by the caller (the schedule's TTL by match state).
    mutating func succeeded(_ response: FeedResponse) {
        conditional.record(response)
        consecutiveFailures = 0
    }

    /// A 304 while something is cached: unchanged, timed by its headers or else by the last interval the feed asked for.
    mutating func notModified<Outcome: PollOutcome>(
        _ response: FeedResponse, now: Date, using rng: inout some RandomNumberGenerator
    ) -> PollResult<Outcome> {
        PollResult(outcome: .unchanged, delay: succeeded(response, bodyRetryAfterMs: nil, now: now, using: &rng))
    }

    /// No usable answer (`response` nil: none at all): `.failed`, after the delay `failed` gives.
    mutating func failure<Outcome: PollOutcome>(
        _ error: FeedError, response: FeedResponse?, now: Date, using rng: inout some RandomNumberGenerator
    ) -> PollResult<Outcome> {
        PollResult(outcome: .failed(error), delay: failed(response, now: now, using: &rng))
    }

    /// A failure. A 429 or 503 that says when to come back (body `retryAfterMs`, then `Retry-After`)
    /// is obeyed within the policy's bounds; anything else backs off exponentially.
    mutating func failed(_ response: FeedResponse?, now: Date, using rng: inout some RandomNumberGenerator) -> Duration {
        consecutiveFailures += 1
        if let response, response.status == 429 || response.status == 503,
            let hint = Self.bodyRetryAfter(response.body).map(Duration.milliseconds)
                ?? response.headers["retry-after"].flatMap({ PollTimingPolicy.parseRetryAfter($0, now: now) })
        {
            return policy.jittered(policy.clamped(hint), using: &rng)
        }
        return policy.backoff(consecutiveFailures: consecutiveFailures, using: &rng)
    }

    private struct RetryHint: Decodable {
        var retryAfterMs: Int?
    }

    /// An error body may still be the feed's JSON with `retryAfterMs`; anything else is no hint.
    private static func bodyRetryAfter(_ body: Data?) -> Int? {
        guard let body, !body.isEmpty, let ms = (try? JSONDecoder().decode(RetryHint.self, from: body))?.retryAfterMs,
            ms >= 0
        else { return nil }
        return ms
    }
}
