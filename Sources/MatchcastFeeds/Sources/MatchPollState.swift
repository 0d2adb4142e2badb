import Foundation
import MatchcastCore

/// The pure step behind polling one match: what to request next and what an answer means.
///
/// `MatchSource` drives it over a transport; replay drives the very same step from a recording, so
/// both see identical seq guarding, 304 handling and timing.
public struct MatchPollState: Sendable {
    public let matchId: String
    /// `/matches/{id}` without conditional headers, its id percent-encoded once.
    private let request: FeedRequest
    /// The newest snapshot accepted so far.
    public private(set) var snapshot: MatchSnapshot?
    /// Validators, the interval the feed asked for, failures in a row (`PacedPollStep`).
    public var pacer: PollPacer

    public init(matchId: String, policy: PollTimingPolicy = PollTimingPolicy(), snapshot: MatchSnapshot? = nil) {
        self.matchId = matchId
        self.request = .match(matchId)
        self.snapshot = snapshot
        self.pacer = PollPacer(policy: policy)
    }

    /// The match has ended: no further change is expected, so polling can stop.
    public var isFinal: Bool { snapshot?.status.isFinal ?? false }

    /// `/matches/{id}`, the path every error of this step names.
    public var path: String { request.path }

    /// The next request: `/matches/{id}` with the conditional headers for what is cached.
    public var nextRequest: FeedRequest { prepare(request) }

    /// Takes in one answer.
    ///
    /// - 200: decoded; a snapshot for another match is a decode error; a lower `seq` is `.stale`
    ///   (the timer still resets: the feed did answer); an equal snapshot is `.unchanged`.
    /// - 304: `.unchanged`, timed by its headers or else by the last interval the feed asked for.
    ///   A 304 with nothing cached (validators were never sent, so the feed is confused) is a failure.
    /// - anything else: `.failed`, with backoff (or the `Retry-After` of a 429/503).
    public mutating func ingest(
        _ response: FeedResponse, now: Date, using rng: inout some RandomNumberGenerator
    ) -> PollResult<MatchPollOutcome> {
        switch response.status {
        case 200:
            let decoded: MatchResponse
            do {
                decoded = try Self.decode(response.body, matchId: matchId)
            } catch {
                return pacer.failure(.decode(error, path: path), response: nil, now: now, using: &rng)
            }
            let delay = pacer.succeeded(response, bodyRetryAfterMs: decoded.retryAfterMs, now: now, using: &rng)
            let incoming = decoded.match
            if let held = snapshot?.seq, let seq = incoming.seq, seq < held {
                return PollResult(outcome: .stale(seq: seq), delay: delay)
            }
            if incoming == snapshot {
                return PollResult(outcome: .unchanged, delay: delay)
            }
            snapshot = incoming
            return PollResult(outcome: .updated(incoming), delay: delay)
        case 304 where holdsSnapshot:
            return pacer.notModified(response, now: now, using: &rng)
        default:
            return pacer.failure(.status(response.status, path: path), response: response, now: now, using: &rng)
        }
    }

    /// Whether a snapshot is held, without comparing (and so copying) it as `snapshot != nil` does.
    private var holdsSnapshot: Bool {
        if case .some = snapshot { return true }
        return false
    }

    private static func decode(_ body: Data?, matchId: String) throws(InputError) -> MatchResponse {
        guard let body, !body.isEmpty else { throw InputError(field: "", reason: "empty body") }
        let decoded = try FeedDecoding.match(body)
        guard decoded.match.id == matchId else {
            throw InputError(field: "match.id", reason: "expected '\(matchId)', got '\(decoded.match.id)'")
        }
        return decoded
    }
}
