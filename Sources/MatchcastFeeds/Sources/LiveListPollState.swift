import Foundation
import MatchcastCore

/// The pure step behind polling `/live-matches`: per-match seq guard and failure isolation, plus timing.
///
/// `LiveListSource` drives it over a transport; replay drives it from a recording.
public struct LiveListPollState: Sendable {
    /// The list as last accepted, each match at the newest `seq` seen.
    public private(set) var matches: [MatchSnapshot] = []
    /// Whether a list has been accepted yet (an empty list is a valid answer).
    public private(set) var hasList = false
    /// Validators, the interval the feed asked for, failures in a row (`PacedPollStep`).
    public var pacer: PollPacer

    public init(policy: PollTimingPolicy = PollTimingPolicy()) {
        self.pacer = PollPacer(policy: policy)
    }

    /// `/live-matches`, the path every error of this step names.
    public var path: String { FeedRequest.liveMatches.path }

    /// The next request: `/live-matches` with the conditional headers for what is cached.
    public var nextRequest: FeedRequest { prepare(.liveMatches) }

    /// Takes in one answer. Only a broken envelope (not JSON, no `matches` array) fails the whole
    /// list; a bad entry is reported in `failures` and the others are used.
    public mutating func ingest(
        _ response: FeedResponse, now: Date, using rng: inout some RandomNumberGenerator
    ) -> PollResult<LiveListPollOutcome> {
        switch response.status {
        case 200:
            let decoded: LiveMatchesResponse
            do {
                guard let body = response.body, !body.isEmpty else { throw InputError(field: "", reason: "empty body") }
                decoded = try FeedDecoding.liveMatches(body)
            } catch {
                return pacer.failure(.decode(InputError(error), path: path), response: nil, now: now, using: &rng)
            }
            let delay = pacer.succeeded(response, bodyRetryAfterMs: decoded.retryAfterMs, now: now, using: &rng)
            let update = merge(decoded)
            let first = !hasList
            hasList = true
            matches = update.matches
            let quiet = update.changed.isEmpty && update.removed.isEmpty && update.stale.isEmpty && update.failures.isEmpty
            return PollResult(outcome: quiet && !first ? .unchanged : .updated(update), delay: delay)
        case 304 where hasList:
            return pacer.notModified(response, now: now, using: &rng)
        default:
            return pacer.failure(.status(response.status, path: path), response: response, now: now, using: &rng)
        }
    }

    /// The new list against the held one, match by match.
    private func merge(_ decoded: LiveMatchesResponse) -> LiveListUpdate {
        let held = Dictionary(matches.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var order: [String] = []
        var incoming: [String: MatchSnapshot] = [:]
        for snapshot in decoded.matches {
            // A feed listing one match twice: keep the newer entry rather than failing either.
            if let earlier = incoming[snapshot.id] {
                if (snapshot.seq ?? .min) >= (earlier.seq ?? .min) { incoming[snapshot.id] = snapshot }
            } else {
                order.append(snapshot.id)
                incoming[snapshot.id] = snapshot
            }
        }

        var update = LiveListUpdate(matches: [], failures: decoded.failures)
        for id in order {
            guard let snapshot = incoming[id] else { continue }
            if let old = held[id], let heldSeq = old.seq, let seq = snapshot.seq, seq < heldSeq {
                update.stale.append(StaleSnapshot(matchId: id, seq: seq, heldSeq: heldSeq))
                update.matches.append(old)
                continue
            }
            update.matches.append(snapshot)
            if held[id] != snapshot { update.changed.append(snapshot) }
        }
        var present = Set(order)
        for failure in decoded.failures {
            guard let id = failure.matchId, let old = held[id], present.insert(id).inserted else { continue }
            update.matches.append(old)
        }
        update.removed = matches.map(\.id).filter { !present.contains($0) }
        return update
    }
}
