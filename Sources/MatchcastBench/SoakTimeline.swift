import Foundation
import MatchcastCLI
import MatchcastCore
import MatchcastFeeds

/// A recorded match as `bench soak` plays it: the distinct in-play states of one match of a recording (what its
/// `/matches/{id}` answers held, in order), shown one after another under the soak's own match id, and looped
/// with `seq` still growing, so the match stays live for as long as the soak runs; then its final state. Before
/// them, the match as scheduled (what devices follow).
struct SoakTimeline: Sendable {
    /// The in-play states, in the recording's order (at least one).
    let states: [MatchSnapshot]
    /// The state that ends the soak: the recording's final one, else the last in-play one marked completed.
    let final: MatchSnapshot
    let matchId: String

    /// Reads `data` (a recording: `matchcast record` or `matchcast import`) and keeps the first match that has
    /// in-play states.
    init(recording data: Data, matchId: String) throws {
        let parse = RecordingReader.read(data)
        if parse.isFatal {
            let first = parse.errors.first.map { "line \($0.line): \($0.message)" } ?? ""
            throw CommandFailure("the recording cannot be read (\(first))")
        }
        var byMatch: [String: [MatchSnapshot]] = [:]
        var order: [String] = []
        for line in parse.lines where line.status == 200 && line.request.hasPrefix("/matches/") {
            guard let body = line.body, let snapshot = try? FeedDecoding.match(body).match else { continue }
            if byMatch[snapshot.id] == nil { order.append(snapshot.id) }
            byMatch[snapshot.id, default: []].append(snapshot)
        }
        guard let recorded = order.first(where: { byMatch[$0]!.contains { $0.status.isInProgress } }) else {
            throw CommandFailure("the recording has no match answer in play (/matches/{id} with status live or break)")
        }
        let snapshots = byMatch[recorded]!
        var states: [MatchSnapshot] = []
        for snapshot in snapshots where snapshot.status.isInProgress {
            // A poll that found nothing new is the same state again: shown once.
            if let last = states.last, last.seq == snapshot.seq, last.score == snapshot.score { continue }
            states.append(snapshot)
        }
        var final = snapshots.last { $0.status == .completed } ?? states[states.count - 1]
        final.status = .completed
        self.states = states
        self.final = final
        self.matchId = matchId
    }

    /// Before the first state: the match as scheduled to start in an hour (`seq` 1).
    func scheduled(at now: Date) -> MatchSnapshot {
        var snapshot = relabel(states[0], seq: 1, at: now)
        snapshot.status = .scheduled
        snapshot.startsAt = now.addingTimeInterval(3600)
        return snapshot
    }

    /// The `step`-th state shown (0 first): the recording's in-play states in a loop, under `matchId`, with
    /// `seq` = step + 2 and the times of now.
    func state(_ step: Int, at now: Date) -> MatchSnapshot {
        relabel(states[step % states.count], seq: step + 2, at: now)
    }

    /// The final state, after `steps` states were shown.
    func finalState(after steps: Int, at now: Date) -> MatchSnapshot {
        relabel(final, seq: steps + 2, at: now)
    }

    private func relabel(_ snapshot: MatchSnapshot, seq: Int, at now: Date) -> MatchSnapshot {
        var snapshot = snapshot
        snapshot.id = matchId
        snapshot.seq = seq
        snapshot.startsAt = now.addingTimeInterval(-600)
        snapshot.updatedAt = now
        return snapshot
    }
}
