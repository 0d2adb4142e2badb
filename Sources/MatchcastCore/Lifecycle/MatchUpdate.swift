/// A change of one match, rendered once and shared by every activity that follows it.
///
/// Its fields live behind one immutable reference, replaced when one of them is set: a fan-out hands the same update
/// to every activity of the match, and a copy of the fields themselves (the rendered snapshot's strings, the key
/// events, the alert) would be dozens of retains per activity.
public struct MatchUpdate: Sendable, Hashable {
    private var fields: Fields

    public var rendered: RenderedMatch {
        get { fields.values.rendered }
        set { fields = fields.with { $0.rendered = newValue } }
    }
    /// The content-state with `event` set to the latest key event.
    public var content: ContentState {
        get { fields.values.contentBox.value }
        set { fields = fields.with { $0.contentBox = ContentBox(newValue) } }
    }
    /// Key moments since the previous update, in order; non-empty means an alert, sent at `keyEventPriority`.
    public var keyEvents: [KeyEvent] {
        get { fields.values.keyEvents }
        set { fields = fields.with { $0.keyEvents = newValue } }
    }
    /// The priority its key events go at: 10, or 5 once the match's activities have had their hourly ceiling of
    /// priority-10 pushes (`HighPriorityLedger`).
    public var keyEventPriority: Int {
        get { fields.values.keyEventPriority }
        set { fields = fields.with { $0.keyEventPriority = newValue } }
    }
    /// The source's current poll interval: the stale-date is a multiple of it.
    public var pollInterval: Duration {
        get { fields.values.pollInterval }
        set { fields = fields.with { $0.pollInterval = newValue } }
    }
    /// The alert for this update's key events: the first's title, their bodies joined. Built once
    /// per update, so every push of a fan-out shares its strings.
    public var alert: APS.Alert? { fields.alert }
    /// The content, shared by reference with every lifecycle and push that takes it.
    var contentBox: ContentBox { fields.values.contentBox }
    /// The match's broadcast channel (iOS 18), when it has one: activities started from this update
    /// listen on it (`input-push-channel`) and get their updates from it, not per token.
    public var channelId: String? {
        get { fields.values.channelId }
        set { fields = fields.with { $0.channelId = newValue } }
    }

    /// Every field given at once: setting one afterwards makes the fields (and the alert) again.
    public init(
        rendered: RenderedMatch, content: ContentState, keyEvents: [KeyEvent], pollInterval: Duration,
        keyEventPriority: Int = 10, channelId: String? = nil
    ) {
        fields = Fields(Values(rendered: rendered, contentBox: ContentBox(content), keyEvents: keyEvents,
                               keyEventPriority: keyEventPriority, pollInterval: pollInterval, channelId: channelId))
    }

    public var snapshot: MatchSnapshot { fields.values.rendered.snapshot }
    public var status: MatchStatus { fields.values.rendered.snapshot.status }

    public static func == (lhs: MatchUpdate, rhs: MatchUpdate) -> Bool {
        lhs.fields === rhs.fields || lhs.fields.values == rhs.fields.values
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(fields.values)
    }

    /// Every field but the alert, which follows from the key events.
    private struct Values: Hashable {
        var rendered: RenderedMatch
        var contentBox: ContentBox
        var keyEvents: [KeyEvent]
        var keyEventPriority: Int
        var pollInterval: Duration
        var channelId: String?
    }

    private final class Fields: Sendable {
        let values: Values
        let alert: APS.Alert?

        init(_ values: Values) {
            self.values = values
            if let first = values.keyEvents.first {
                alert = APS.Alert(title: first.title, body: values.keyEvents.map(\.body).joined(separator: " · "))
            } else {
                alert = nil
            }
        }

        /// These fields with one changed (the alert made again from the key events).
        func with(_ change: (inout Values) -> Void) -> Fields {
            var values = values
            change(&values)
            return Fields(values)
        }
    }
}
