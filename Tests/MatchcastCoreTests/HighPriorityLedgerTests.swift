import Foundation
import Testing
@testable import MatchcastCore

// The budget ledger: key events at priority 10 up to an hourly ceiling per match, at 5 past it; the final always at
// 10; an hour that slides, not one that resets on the clock.

private enum LedgerFixture {
    static let epoch: TimeInterval = 1_776_780_000
    static let home = Team(id: "mun", name: "Manchester United", short: "MUN")
    static let away = Team(id: "liv", name: "Liverpool", short: "LIV")

    static func at(_ seconds: Double) -> Date { Date(timeIntervalSince1970: epoch + seconds) }

    static func snapshot(_ status: MatchStatus, _ home: Int, _ away: Int, clock: String) -> MatchSnapshot {
        MatchSnapshot(
            id: "epl-mun-liv", sport: .football, status: status, home: Self.home, away: Self.away,
            score: .teamTotals(TeamScore(home: home, away: away, period: "1H", clock: clock)))
    }
}

@Suite("High-priority ledger")
struct HighPriorityLedgerTests {
    fileprivate typealias F = LedgerFixture

    @Test func countsThePushesOfTheLastHourOnly() {
        var ledger = HighPriorityLedger()
        ledger.record(at: F.at(0))
        ledger.record(at: F.at(600))
        ledger.record(at: F.at(1200))
        #expect(ledger.count(at: F.at(1200)) == 3)
        #expect(ledger.count(at: F.at(3599)) == 3)
        // The first leaves the hour exactly an hour after it went out.
        #expect(ledger.count(at: F.at(3600)) == 2)
        #expect(ledger.nextRoom(at: F.at(3600)) == F.at(4200))
        #expect(ledger.count(at: F.at(4800)) == 0)
        #expect(ledger.nextRoom(at: F.at(4800)) == nil)
        // Recording lets go of what left the hour: the ledger stays as small as the ceiling.
        ledger.record(at: F.at(4800))
        #expect(ledger.sends == [Int(F.epoch + 4800)])
    }

    @Test func keyEventsGoAtTenUpToTheCeilingThenAtFiveUntilTheHourMakesRoom() throws {
        var tracker = MatchTracker()
        let ceiling = 2
        func ingest(_ home: Int, _ away: Int, _ status: MatchStatus = .live, at seconds: Double) throws -> MatchUpdate? {
            try tracker.ingest(
                F.snapshot(status, home, away, clock: "\(Int(seconds / 60))'"), pollInterval: .seconds(5), at: F.at(seconds),
                highPriorityPerHour: ceiling)
        }
        // Kick-off is a key event (match start): the first of the hour's two.
        let kickOff = try #require(try ingest(0, 0, at: 0))
        #expect(kickOff.keyEvents.map(\.kind) == [.matchStart])
        #expect(kickOff.keyEventPriority == 10)
        let routine = try #require(try ingest(0, 0, at: 60))
        #expect(routine.keyEvents.isEmpty)
        #expect(tracker.ledger.count(at: F.at(60)) == 1, "a routine update spends nothing")
        #expect(try #require(try ingest(1, 0, at: 600)).keyEventPriority == 10)
        let third = try #require(try ingest(2, 0, at: 1200))
        #expect(third.keyEvents.map(\.kind) == [.goal])
        #expect(third.keyEventPriority == 5, "past the ceiling")
        #expect(tracker.ledger.count(at: F.at(1200)) == 2, "a key event at 5 spends nothing")
        // An hour after kick-off one push has left the hour: the next goal goes at 10 again.
        #expect(try #require(try ingest(3, 0, at: 3600)).keyEventPriority == 10)
        #expect(try #require(try ingest(4, 0, at: 3700)).keyEventPriority == 5)
        // The final goes at 10 whatever the ledger says, and counts.
        let final = try #require(try ingest(4, 0, .completed, at: 3800))
        #expect(final.keyEventPriority == 10)
        #expect(tracker.ledger.count(at: F.at(3800)) == 3)
    }

    @Test func aResumedTrackerKeepsItsLedger() throws {
        var ledger = HighPriorityLedger()
        ledger.record(at: F.at(0))
        ledger.record(at: F.at(10))
        var tracker = MatchTracker()
        tracker.resume(from: F.snapshot(.live, 1, 0, clock: "10'"), event: "Goal! Manchester United", ledger: ledger)
        let goal = try #require(try tracker.ingest(
            F.snapshot(.live, 2, 0, clock: "11'"), pollInterval: .seconds(5), at: F.at(20), highPriorityPerHour: 2))
        #expect(goal.keyEvents.map(\.kind) == [.goal])
        #expect(goal.keyEventPriority == 5, "the ceiling counts the pushes made before the restart")
    }

    @Test func anActiveActivitySendsAKeyEventAtItsUpdatesPriorityWithItsAlert() throws {
        let policy = ActivityPolicy(highPriorityPerHour: 1)
        var lifecycle = ActivityLifecycle(activityId: "act_1", matchId: "epl-mun-liv")
        var tracker = MatchTracker()
        let kickOff = try #require(try tracker.ingest(
            F.snapshot(.live, 0, 0, clock: "1'"), pollInterval: .seconds(5), at: F.at(0), highPriorityPerHour: 1))
        _ = lifecycle.matchChanged(kickOff, now: F.at(0), policy: policy)
        _ = lifecycle.updateTokenRegistered("tok-1", now: F.at(1), policy: policy)
        let goal = try #require(try tracker.ingest(
            F.snapshot(.live, 1, 0, clock: "9'"), pollInterval: .seconds(5), at: F.at(540), highPriorityPerHour: 1))
        let sent = lifecycle.matchChanged(goal, now: F.at(540), policy: policy).compactMap { action -> PushIntent? in
            if case .send(let intent) = action { intent } else { nil }
        }
        #expect(sent.count == 1)
        #expect(sent.first?.priority == 5)
        #expect(sent.first?.aps.alert?.body == "Goal! Manchester United", "the alert still goes, at priority 5")
        #expect(sent.first?.aps.event == .update)
    }
}
