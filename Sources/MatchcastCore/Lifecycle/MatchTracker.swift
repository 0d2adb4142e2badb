import Foundation

/// Follows one match's snapshots: renders each once, finds key events against the previous
/// one, and says when nothing a device shows has changed.
public struct MatchTracker: Sendable, Hashable {
    /// The last snapshot taken, rendered.
    public var current: RenderedMatch? { rendered?.value }
    /// `current`, behind one reference: the lifecycle keeps a tracker per match and copies it as a match's state
    /// moves, and a rendered match inline is a few dozen strings to retain and release at every copy.
    private var rendered: RenderedBox?
    /// The latest update handed out, for activities that join later. Its `channelId` is the
    /// match's broadcast channel as last attached, and carries on to the updates after it.
    public private(set) var latest: MatchUpdate?
    /// The priority-10 pushes of the last hour, which decide the priority of the next key event.
    public private(set) var ledger = HighPriorityLedger()

    public init() {}

    /// The match got (or lost) a broadcast channel: the latest update and every later one carry it.
    public mutating func attach(channelId: String?) {
        latest?.channelId = channelId
    }

    /// Takes a snapshot at `now`; returns the update to fan out, or nil when the content-state did not change
    /// and there is no key event. Its key events go at priority 10 while fewer than `highPriorityPerHour` went out in
    /// the last hour, at 5 after (`HighPriorityLedger`). Throws when the snapshot's score cannot be interpreted.
    public mutating func ingest(
        _ snapshot: MatchSnapshot, pollInterval: Duration, at now: Date, highPriorityPerHour: Int
    ) throws(InputError) -> MatchUpdate? {
        let rendered = try MatchRenderer.render(snapshot)
        let events = KeyEventDetector.detect(previous: current, current: rendered)
        var content = rendered.contentState
        content.event = events.last?.body ?? latest?.content.event
        self.rendered = RenderedBox(rendered)
        if let latest, events.isEmpty, latest.content == content {
            self.latest?.pollInterval = pollInterval
            return nil
        }
        let priority = ledger.priority(
            isFinal: rendered.snapshot.status.isFinal, hasKeyEvents: !events.isEmpty, at: now, ceiling: highPriorityPerHour)
        let update = MatchUpdate(
            rendered: rendered, content: content, keyEvents: events, pollInterval: pollInterval, keyEventPriority: priority,
            channelId: latest?.channelId)
        latest = update
        return update
    }

    /// Takes up where a previous process left off: `snapshot` is the last one it saw and `event`
    /// the event text its devices last got, `ledger` its priority-10 pushes. No key events are derived from it.
    public mutating func resume(
        from snapshot: MatchSnapshot, event: String?, ledger: HighPriorityLedger = HighPriorityLedger(),
        pollInterval: Duration = .seconds(10)
    ) {
        self.ledger = ledger
        guard let rendered = try? MatchRenderer.render(snapshot) else { return }
        var content = rendered.contentState
        content.event = event
        self.rendered = RenderedBox(rendered)
        latest = MatchUpdate(rendered: rendered, content: content, keyEvents: [], pollInterval: pollInterval)
    }
}

/// A rendered match, shared by the copies of a tracker; compared and hashed by value.
private final class RenderedBox: Sendable, Hashable {
    let value: RenderedMatch

    init(_ value: RenderedMatch) {
        self.value = value
    }

    static func == (lhs: RenderedBox, rhs: RenderedBox) -> Bool {
        lhs === rhs || lhs.value == rhs.value
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(value)
    }
}
