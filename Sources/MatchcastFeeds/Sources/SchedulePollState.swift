import Foundation
import MatchcastCore

/// The pure step behind polling the schedule of one date: validators, decoding, TTL by match state.
///
/// On success the delay is the TTL (`ScheduleTTL`), not the feed's interval: the schedule carries no
/// `retryAfterMs`, and how fresh it must be depends on whether its matches are in play. Failures back
/// off like any other feed poll.
public struct SchedulePollState: Sendable {
    /// `YYYY-MM-DD`.
    public let date: String
    /// The schedule as last accepted.
    public private(set) var schedule: ScheduleResponse?
    public var ttl: ScheduleTTL
    /// Validators, the interval the feed asked for, failures in a row (`PacedPollStep`).
    public var pacer: PollPacer

    public init(date: String, policy: PollTimingPolicy = PollTimingPolicy(), ttl: ScheduleTTL = ScheduleTTL()) {
        self.date = date
        self.ttl = ttl
        self.pacer = PollPacer(policy: policy)
    }

    /// `/schedule?date=...`, the path every error of this step names.
    public var path: String { FeedRequest.schedule(date: date).path }

    /// The next request: `/schedule?date=...` with the conditional headers for what is cached.
    public var nextRequest: FeedRequest { prepare(.schedule(date: date)) }

    /// How long the held schedule stays fresh.
    public var currentTTL: Duration { ttl.ttl(for: schedule?.matches ?? []) }

    /// Takes in one answer: 200 decoded (a `date` other than the one asked for is a decode error),
    /// 304 unchanged (when something is cached), anything else failed.
    public mutating func ingest(
        _ response: FeedResponse, now: Date, using rng: inout some RandomNumberGenerator
    ) -> PollResult<SchedulePollOutcome> {
        switch response.status {
        case 200:
            let decoded: ScheduleResponse
            do {
                decoded = try Self.decode(response.body, date: date)
            } catch {
                return pacer.failure(.decode(error, path: path), response: nil, now: now, using: &rng)
            }
            pacer.succeeded(response)
            let same = schedule.map { $0.matches == decoded.matches && $0.failures == decoded.failures } ?? false
            schedule = decoded
            return PollResult(outcome: same ? .unchanged : .updated(decoded), delay: currentTTL)
        case 304 where schedule != nil:
            pacer.succeeded(response)
            return PollResult(outcome: .unchanged, delay: currentTTL)
        default:
            return pacer.failure(.status(response.status, path: path), response: response, now: now, using: &rng)
        }
    }

    private static func decode(_ body: Data?, date: String) throws(InputError) -> ScheduleResponse {
        guard let body, !body.isEmpty else { throw InputError(field: "", reason: "empty body") }
        var decoded = try FeedDecoding.schedule(body)
        if decoded.date.isEmpty {
            decoded.date = date
        } else if decoded.date != date {
            throw InputError(field: "date", reason: "expected '\(date)', got '\(decoded.date.prefix(40))'")
        }
        return decoded
    }
}
