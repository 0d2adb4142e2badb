import Foundation
import Testing
@testable import MatchcastCore

/// `ActivityLifecycle.storesSentState` answers, in place, what comparing the fan-out's fields of two `stored` values
/// answers: a SQL store's fan-out asks it of every activity it moved.
@Suite("ActivityLifecycle.storesSentState: the fan-out's fields of `stored`, compared in place")
struct StoredSentStateTests {
    static let policy = ScratchFixture.policy

    static func at(_ seconds: Double) -> Date { ScratchFixture.at(seconds) }

    static func update(_ status: MatchStatus, _ home: Int, minute: Int, goal: Bool = false) -> MatchUpdate {
        ScratchFixture.update(status, home, clock: "\(minute)'", keyEvents: goal ? [ScratchFixture.goal(home)] : [])
    }

    /// Lifecycles in every state a fan-out meets: waiting, starting with content held for its token, active after
    /// goals, with a routine change held back, ended; and each again with its contents in boxes of their own.
    static func lifecycles() -> [ActivityLifecycle] {
        var all: [ActivityLifecycle] = [ActivityLifecycle(activityId: "act_0", matchId: "epl-mun-liv")]
        var starting = all[0]
        _ = starting.matchChanged(update(.live, 0, minute: 1), now: at(0), policy: policy)
        all.append(starting)
        _ = starting.matchChanged(update(.live, 1, minute: 2, goal: true), now: at(30), policy: policy)
        all.append(starting)
        var active = starting
        _ = active.updateTokenRegistered("tok-1", now: at(31), policy: policy)
        all.append(active)
        for (step, seconds) in [(2, 100.0), (3, 200), (3, 201), (4, 202)] {
            _ = active.matchChanged(update(.live, step, minute: step * 10, goal: step != 3), now: at(seconds), policy: policy)
            all.append(active)
        }
        // A routine change right after a push is held back.
        _ = active.matchChanged(update(.live, 4, minute: 41), now: at(203), policy: policy)
        all.append(active)
        // Another, held in its place: the two differ in the held content alone.
        _ = active.matchChanged(update(.live, 4, minute: 42), now: at(204), policy: policy)
        all.append(active)
        _ = active.matchChanged(update(.completed, 4, minute: 90), now: at(400), policy: policy)
        all.append(active)
        let reboxed = all.map { lifecycle -> ActivityLifecycle in
            var stored = lifecycle.stored
            stored.sent = stored.sent.map { ContentBox($0.value) }
            stored.held = stored.held.map { ContentBox($0.value) }
            return ActivityLifecycle(activityId: lifecycle.activityId, matchId: lifecycle.matchId, stored: stored)
        }
        // Each field changed alone, the rest as they were.
        let other = ContentBox(update(.live, 9, minute: 89).content)
        let changes: [(inout ActivityLifecycle.Stored) -> Void] = [
            { $0.lastTimestamp += 1 },
            { $0.sent = $0.sent == nil ? other : nil },
            { $0.sentAt = ($0.sentAt ?? 0) + 1 },
            { $0.sentStaleDate = ($0.sentStaleDate ?? 0) + 1 },
            { $0.held = $0.held == nil ? other : nil },
            { $0.heldStaleness = ($0.heldStaleness ?? 0) + 1 },
        ]
        let changed = all.flatMap { lifecycle in
            changes.map { change in
                var stored = lifecycle.stored
                change(&stored)
                return ActivityLifecycle(activityId: lifecycle.activityId, matchId: lifecycle.matchId, stored: stored)
            }
        }
        return all + reboxed + changed
    }

    @Test("for every pair of states, the same answer as comparing the stored fields")
    func agreesWithStored() {
        let all = Self.lifecycles()
        var same = 0
        var different = 0
        for lhs in all {
            for rhs in all {
                let stored = rhs.stored
                let expected = lhs.stored.lastTimestamp == stored.lastTimestamp && lhs.stored.sent == stored.sent
                    && lhs.stored.sentAt == stored.sentAt && lhs.stored.sentStaleDate == stored.sentStaleDate
                    && lhs.stored.held == stored.held && lhs.stored.heldStaleness == stored.heldStaleness
                let answer = lhs.storesSentState(
                    lastTimestamp: stored.lastTimestamp, sent: stored.sent, sentAt: stored.sentAt,
                    sentStaleDate: stored.sentStaleDate, held: stored.held, heldStaleness: stored.heldStaleness)
                #expect(answer == expected)
                if expected { same += 1 } else { different += 1 }
            }
        }
        // Not only the diagonal: the reboxed copies read the same, and the states differ from each other.
        #expect(same > all.count)
        #expect(different > all.count * all.count / 2)
        // Held content and a held staleness are among the states compared.
        #expect(all.contains { $0.stored.held != nil && $0.stored.heldStaleness != nil && $0.phase == .active })
        #expect(all.contains { $0.stored.sentStaleDate != nil })
    }
}
