/// A change of one match, rendered once and shared by every activity that follows it.
public struct MatchUpdate: Sendable, Hashable {
    public var rendered: RenderedMatch
    /// The content-state with `event` set to the latest key event.
    public var content: ContentState {
        get { contentBox.value }
        set { contentBox = ContentBox(newValue) }
    }
    /// Key moments since the previous update, in order; non-empty means an alert, sent at `keyEventPriority`.
    public var keyEvents: [KeyEvent] {
        didSet { alert = Self.alert(for: keyEvents) }
    }
    /// The priority its key events go at: 10, or 5 once the match's activities have had their hourly ceiling of
    /// priority-10 pushes (`HighPriorityLedger`).
    public var keyEventPriority = 10
    /// The source's current poll interval: the stale-date is a multiple of it.
    public var pollInterval: Duration
    /// The alert for this update's key events: the first's title, their bodies joined. Built once
    /// per update, so every push of a fan-out shares its strings.
    public private(set) var alert: APS.Alert?
    /// The content, shared by reference with every lifecycle and push that takes it.
    private(set) var contentBox: ContentBox
    /// The match's broadcast channel (iOS 18), when it has one: activities started from this update
    /// listen on it (`input-push-channel`) and get their updates from it, not per token.
    public var channelId: String?

    public init(rendered: RenderedMatch, content: ContentState, keyEvents: [KeyEvent], pollInterval: Duration) {
        self.rendered = rendered
        contentBox = ContentBox(content)
        self.keyEvents = keyEvents
        self.pollInterval = pollInterval
        alert = Self.alert(for: keyEvents)
    }

    public var snapshot: MatchSnapshot { rendered.snapshot }
    public var status: MatchStatus { rendered.snapshot.status }

    private static func alert(for keyEvents: [KeyEvent]) -> APS.Alert? {
        guard let first = keyEvents.first else { return nil }
        return APS.Alert(title: first.title, body: keyEvents.map(\.body).joined(separator: " · "))
    }
}
