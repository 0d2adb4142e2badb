import Foundation
import Testing
@testable import MatchcastCore

// A match update is made once per change with every field (the tracker's path), or changed a field at a time (a
// channel attached later, a priority lowered): both must be the same update, alert included.

@Suite("Match update")
struct MatchUpdateTests {
    @Test func anUpdateMadeWholeIsTheUpdateWhoseFieldsAreSetAfterIt() {
        let base = ScratchFixture.update(.live, 2, keyEvents: [ScratchFixture.goal(1), ScratchFixture.goal(2)])
        let whole = MatchUpdate(
            rendered: base.rendered, content: base.content, keyEvents: base.keyEvents, pollInterval: base.pollInterval,
            keyEventPriority: 5, channelId: "ch-1")
        var stepwise = base
        stepwise.channelId = "ch-1"
        stepwise.keyEventPriority = 5
        #expect(whole == stepwise)
        #expect(whole.keyEventPriority == 5)
        #expect(whole.channelId == "ch-1")
        #expect(whole.alert == stepwise.alert)
        #expect(whole.alert?.body == "Goal 1 · Goal 2")
        // The defaults are those of an update with nothing set.
        let plain = MatchUpdate(
            rendered: base.rendered, content: base.content, keyEvents: base.keyEvents, pollInterval: base.pollInterval)
        #expect(plain.keyEventPriority == 10)
        #expect(plain.channelId == nil)
        #expect(plain != whole)
    }

    @Test func theTrackerCarriesTheChannelAndSetsThePriorityOfEachUpdate() throws {
        var tracker = MatchTracker()
        let first = try #require(try tracker.ingest(
            ScratchFixture.update(.live, 0).snapshot, pollInterval: .seconds(5), at: ScratchFixture.at(0),
            highPriorityPerHour: 1))
        #expect(first.keyEventPriority == 10, "kick-off, the first key event of the hour")
        tracker.attach(channelId: "ch-7")
        let goal = try #require(try tracker.ingest(
            ScratchFixture.update(.live, 1).snapshot, pollInterval: .seconds(5), at: ScratchFixture.at(60),
            highPriorityPerHour: 1))
        #expect(goal.keyEvents.map(\.kind) == [.goal])
        #expect(goal.keyEventPriority == 5, "the hour's one priority-10 push is spent")
        #expect(goal.channelId == "ch-7", "the channel attached to the match rides on its next update")
        #expect(tracker.latest == goal)
    }
}
