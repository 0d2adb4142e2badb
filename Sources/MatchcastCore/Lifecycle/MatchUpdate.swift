/// A change of one match, rendered once and shared by every activity that follows it.
public struct MatchUpdate: Sendable, Hashable {
    public var rendered: RenderedMatch
    /// The content-state with `event` set to the latest key event.
    public var content: ContentState
    /// Key moments since the previous update, in order; non-empty means priority 10 and an alert.
    public var keyEvents: [KeyEvent]
    /// The source's current poll interval: the stale-date is a multiple of it.
    public var pollInterval: Duration

    public init(rendered: RenderedMatch, content: ContentState, keyEvents: [KeyEvent], pollInterval: Duration) {
        self.rendered = rendered
        self.content = content
        self.keyEvents = keyEvents
        self.pollInterval = pollInterval
    }

    public var snapshot: MatchSnapshot { rendered.snapshot }
    public var status: MatchStatus { rendered.snapshot.status }

    /// The alert for this update's key events: the first's title, their bodies joined.
    public var alert: APS.Alert? {
        guard let first = keyEvents.first else { return nil }
        return APS.Alert(title: first.title, body: keyEvents.map(\.body).joined(separator: " · "))
    }
}
