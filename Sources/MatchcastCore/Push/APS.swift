/// The `aps` dictionary of an ActivityKit push, exactly as APNs receives it.
///
/// A value type whose fields live behind one immutable reference (a change makes a new one), so a
/// push intent, a payload and a delivery each carry one pointer, and the content-state is shared
/// with the update it came from.
public struct APS: Sendable, Hashable, Codable {
    /// An alert shown with a key event: title and body.
    ///
    /// Its strings live behind one immutable reference (`SharedFields`), as the `aps`'s own fields do: every push of a
    /// fan-out carries its update's alert (`MatchUpdate.alert`), and the builder compares each push's `aps` with the
    /// last one's.
    public struct Alert: Sendable, Hashable, Codable {
        private struct Fields: Sendable, Hashable, Codable {
            var title: String
            var body: String
            var sound: String?
        }

        private var storage: SharedFields<Fields>

        public var title: String {
            get { storage.fields.title }
            set { storage.fields.title = newValue }
        }

        public var body: String {
            get { storage.fields.body }
            set { storage.fields.body = newValue }
        }

        public var sound: String? {
            get { storage.fields.sound }
            set { storage.fields.sound = newValue }
        }

        public init(title: String, body: String, sound: String? = "default") {
            storage = SharedFields(Fields(title: title, body: body, sound: sound))
        }

        public init(from decoder: any Decoder) throws {
            storage = try SharedFields(from: decoder)
        }

        public func encode(to encoder: any Encoder) throws {
            try storage.encode(to: encoder)
        }
    }

    /// The stored fields, as the memberwise struct they were (with its synthesized conformances).
    private struct Fields: Sendable, Hashable, Codable {
        var timestamp: Int
        var event: ActivityEvent
        var content: ContentBox
        var staleDate: Int?
        var dismissalDate: Int?
        var alert: Alert?
        var attributesType: String?
        var attributes: ActivityAttributes?
        var inputPushChannel: String?

        enum CodingKeys: String, CodingKey {
            case timestamp, event, alert, attributes
            case content = "content-state"
            case staleDate = "stale-date"
            case dismissalDate = "dismissal-date"
            case attributesType = "attributes-type"
            case inputPushChannel = "input-push-channel"
        }
    }

    private var storage: SharedFields<Fields>

    /// Unix seconds; only grows per activity.
    public var timestamp: Int {
        get { storage.fields.timestamp }
        set { storage.fields.timestamp = newValue }
    }

    public var event: ActivityEvent {
        get { storage.fields.event }
        set { storage.fields.event = newValue }
    }

    public var contentState: ContentState {
        get { storage.fields.content.value }
        set { storage.fields.content = ContentBox(newValue) }
    }

    public var staleDate: Int? {
        get { storage.fields.staleDate }
        set { storage.fields.staleDate = newValue }
    }

    public var dismissalDate: Int? {
        get { storage.fields.dismissalDate }
        set { storage.fields.dismissalDate = newValue }
    }

    public var alert: Alert? {
        get { storage.fields.alert }
        set { storage.fields.alert = newValue }
    }

    public var attributesType: String? {
        get { storage.fields.attributesType }
        set { storage.fields.attributesType = newValue }
    }

    public var attributes: ActivityAttributes? {
        get { storage.fields.attributes }
        set { storage.fields.attributes = newValue }
    }

    /// On a push-to-start `start` (iOS 18): the broadcast channel the started activity listens on
    /// (`input-push-channel`), instead of giving the app an update token.
    public var inputPushChannel: String? {
        get { storage.fields.inputPushChannel }
        set { storage.fields.inputPushChannel = newValue }
    }

    public init(
        timestamp: Int, event: ActivityEvent, contentState: ContentState, staleDate: Int? = nil,
        dismissalDate: Int? = nil, alert: Alert? = nil, attributes: ActivityAttributes? = nil
    ) {
        self.init(timestamp: timestamp, event: event, content: ContentBox(contentState), staleDate: staleDate,
                  dismissalDate: dismissalDate, alert: alert, attributes: attributes)
    }

    /// The same, sharing `content` with whoever else holds it.
    init(
        timestamp: Int, event: ActivityEvent, content: ContentBox, staleDate: Int? = nil,
        dismissalDate: Int? = nil, alert: Alert? = nil, attributes: ActivityAttributes? = nil
    ) {
        storage = SharedFields(Fields(
            timestamp: timestamp, event: event, content: content, staleDate: staleDate, dismissalDate: dismissalDate,
            alert: alert, attributesType: attributes == nil ? nil : ActivityAttributes.typeName, attributes: attributes))
    }

    /// Whether the two are one instance (what a fan-out's activities share), not only equal.
    func isSameInstance(as other: APS) -> Bool { storage.isSameInstance(as: other.storage) }

    /// Whether this is the update `ActivityLifecycle` would build from these: the same content and alert (each
    /// compared by identity first), and nothing a start or an end carries.
    func isUpdate(timestamp: Int, content: ContentBox, staleDate: Int, alert: Alert?) -> Bool {
        let s = storage
        return s.fields.event == .update && s.fields.timestamp == timestamp && s.fields.staleDate == staleDate
            && s.fields.dismissalDate == nil && s.fields.attributes == nil && s.fields.attributesType == nil
            && s.fields.inputPushChannel == nil && s.fields.content == content && s.fields.alert == alert
    }

    // MARK: Hashable, Codable: the fields'

    /// The same fields. A fan-out's builder asks this of every activity's `aps` (`DeliveryBuilder`): the numbers, the
    /// content and the alert first (each one shared reference in a fan-out), then what only a start carries, which
    /// an update leaves out on both sides; read in place, not copied out of their storage for the comparison.
    public static func == (lhs: APS, rhs: APS) -> Bool {
        if lhs.storage.isSameInstance(as: rhs.storage) { return true }
        let l = lhs.storage, r = rhs.storage
        guard l.fields.timestamp == r.fields.timestamp, l.fields.event == r.fields.event,
              l.fields.staleDate == r.fields.staleDate, l.fields.dismissalDate == r.fields.dismissalDate,
              l.fields.content == r.fields.content, l.fields.alert == r.fields.alert
        else { return false }
        if l.fields.attributes == nil, r.fields.attributes == nil, l.fields.attributesType == nil,
           r.fields.attributesType == nil, l.fields.inputPushChannel == nil, r.fields.inputPushChannel == nil {
            return true
        }
        return l.fields == r.fields
    }

    public func hash(into hasher: inout Hasher) {
        storage.hash(into: &hasher)
    }

    public init(from decoder: any Decoder) throws {
        storage = try SharedFields(from: decoder)
    }

    public func encode(to encoder: any Encoder) throws {
        try storage.encode(to: encoder)
    }
}
