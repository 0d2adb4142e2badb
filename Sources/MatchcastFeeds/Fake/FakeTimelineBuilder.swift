import Foundation
import MatchcastCore

/// Appends snapshots to a timeline: numbers them, dates them from the feed's epoch and
/// carries the recent key events along.
struct FakeTimelineBuilder {
    /// How many key events a snapshot carries, newest last.
    static let recentEventLimit = 10

    private let base: MatchSnapshot
    private var entries: [FakeTimeline.Entry] = []
    private var events: [MatchEvent] = []

    /// `base` holds what never changes: id, sport, teams, competition, venue, `startsAt`.
    init(base: MatchSnapshot) {
        self.base = base
    }

    /// Simulated time of the latest snapshot.
    var lastTime: Double { entries.last?.time ?? 0 }

    /// Adds a key event, dated at simulated second `time`; it shows from the next snapshot on.
    mutating func event(_ id: String, type: String, at time: Double, text: String) {
        events.append(MatchEvent(id: id, type: type, at: FakeFeed.date(atSimulated: time), text: text))
    }

    /// Adds the snapshot current from simulated second `time`.
    mutating func emit(at time: Double, status: MatchStatus, score: Score) {
        precondition(time >= lastTime, "timeline entries are in time order")
        var snapshot = base
        snapshot.status = status
        snapshot.score = score
        snapshot.seq = entries.count + 1
        snapshot.updatedAt = FakeFeed.date(atSimulated: time)
        snapshot.events = Array(events.suffix(Self.recentEventLimit))
        entries.append(FakeTimeline.Entry(time: time, snapshot: snapshot))
    }

    func build() -> FakeTimeline {
        FakeTimeline(id: base.id, entries: entries)
    }
}
