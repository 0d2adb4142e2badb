import Foundation

/// Follows one match's snapshots: renders each once, finds key events against the previous
/// one, and says when nothing a device shows has changed.
public struct MatchTracker: Sendable, Hashable {
    public private(set) var current: RenderedMatch?
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
        current = rendered
        if let latest, events.isEmpty, latest.content == content {
            self.latest?.pollInterval = pollInterval
            return nil
        }
        var update = MatchUpdate(rendered: rendered, content: content, keyEvents: events, pollInterval: pollInterval)
        update.channelId = latest?.channelId
        update.keyEventPriority = ledger.priority(for: update, at: now, ceiling: highPriorityPerHour)
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
        current = rendered
        latest = MatchUpdate(rendered: rendered, content: content, keyEvents: [], pollInterval: pollInterval)
    }
}
