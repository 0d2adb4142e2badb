/// The `aps` dictionary of an ActivityKit push, exactly as APNs receives it.
///
/// A value type whose fields live behind one immutable reference (a change makes a new one), so a
/// push intent, a payload and a delivery each carry one pointer, and the content-state is shared
/// with the update it came from.
public struct APS: Sendable, Hashable, Codable {
    /// An alert shown with a key event: title and body.
    public struct Alert: Sendable, Hashable, Codable {
        public var title: String
        public var body: String
        public var sound: String?

        public init(title: String, body: String, sound: String? = "default") {
            self.title = title
            self.body = body
            self.sound = sound
        }
    }

    /// The stored fields, as the memberwise struct they were.
    private struct Fields: Sendable {
        var timestamp: Int
        var event: ActivityEvent
        var content: ContentBox
        var staleDate: Int?
        var dismissalDate: Int?
        var alert: Alert?
        var attributesType: String?
        var attributes: ActivityAttributes?
        var inputPushChannel: String?
    }

    private final class Storage: Sendable {
        let fields: Fields
        init(_ fields: Fields) { self.fields = fields }
    }

    private var storage: Storage

    private var fields: Fields {
        get { storage.fields }
        set { storage = Storage(newValue) }
    }

    /// Unix seconds; only grows per activity.
    public var timestamp: Int {
        get { storage.fields.timestamp }
        set { fields.timestamp = newValue }
    }

    public var event: ActivityEvent {
        get { storage.fields.event }
        set { fields.event = newValue }
    }

    public var contentState: ContentState {
        get { storage.fields.content.value }
        set { fields.content = ContentBox(newValue) }
    }

    public var staleDate: Int? {
        get { storage.fields.staleDate }
        set { fields.staleDate = newValue }
    }

    public var dismissalDate: Int? {
        get { storage.fields.dismissalDate }
        set { fields.dismissalDate = newValue }
    }

    public var alert: Alert? {
        get { storage.fields.alert }
        set { fields.alert = newValue }
    }

    public var attributesType: String? {
        get { storage.fields.attributesType }
        set { fields.attributesType = newValue }
    }

    public var attributes: ActivityAttributes? {
        get { storage.fields.attributes }
        set { fields.attributes = newValue }
    }

    /// On a push-to-start `start` (iOS 18): the broadcast channel the started activity listens on
    /// (`input-push-channel`), instead of giving the app an update token.
    public var inputPushChannel: String? {
        get { storage.fields.inputPushChannel }
        set { fields.inputPushChannel = newValue }
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
        storage = Storage(Fields(
            timestamp: timestamp, event: event, content: content, staleDate: staleDate, dismissalDate: dismissalDate,
            alert: alert, attributesType: attributes == nil ? nil : ActivityAttributes.typeName, attributes: attributes))
    }

    // MARK: Hashable, Codable: as the memberwise struct's synthesized ones

    public static func == (lhs: APS, rhs: APS) -> Bool {
        if lhs.storage === rhs.storage { return true }
        let l = lhs.storage.fields, r = rhs.storage.fields
        return l.timestamp == r.timestamp && l.event == r.event && ContentBox.same(l.content, r.content)
            && l.staleDate == r.staleDate && l.dismissalDate == r.dismissalDate && l.alert == r.alert
            && l.attributesType == r.attributesType && l.attributes == r.attributes
            && l.inputPushChannel == r.inputPushChannel
    }

    public func hash(into hasher: inout Hasher) {
        let f = storage.fields
        hasher.combine(f.timestamp)
        hasher.combine(f.event)
        hasher.combine(f.content.value)
        hasher.combine(f.staleDate)
        hasher.combine(f.dismissalDate)
        hasher.combine(f.alert)
        hasher.combine(f.attributesType)
        hasher.combine(f.attributes)
        hasher.combine(f.inputPushChannel)
    }

    enum CodingKeys: String, CodingKey {
        case timestamp, event, alert, attributes
        case contentState = "content-state"
        case staleDate = "stale-date"
        case dismissalDate = "dismissal-date"
        case attributesType = "attributes-type"
        case inputPushChannel = "input-push-channel"
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        storage = Storage(Fields(
            timestamp: try container.decode(Int.self, forKey: .timestamp),
            event: try container.decode(ActivityEvent.self, forKey: .event),
            content: ContentBox(try container.decode(ContentState.self, forKey: .contentState)),
            staleDate: try container.decodeIfPresent(Int.self, forKey: .staleDate),
            dismissalDate: try container.decodeIfPresent(Int.self, forKey: .dismissalDate),
            alert: try container.decodeIfPresent(Alert.self, forKey: .alert),
            attributesType: try container.decodeIfPresent(String.self, forKey: .attributesType),
            attributes: try container.decodeIfPresent(ActivityAttributes.self, forKey: .attributes),
            inputPushChannel: try container.decodeIfPresent(String.self, forKey: .inputPushChannel)))
    }

    public func encode(to encoder: any Encoder) throws {
        let f = storage.fields
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(f.timestamp, forKey: .timestamp)
        try container.encode(f.event, forKey: .event)
        try container.encode(f.content.value, forKey: .contentState)
        try container.encodeIfPresent(f.staleDate, forKey: .staleDate)
        try container.encodeIfPresent(f.dismissalDate, forKey: .dismissalDate)
        try container.encodeIfPresent(f.alert, forKey: .alert)
        try container.encodeIfPresent(f.attributesType, forKey: .attributesType)
        try container.encodeIfPresent(f.attributes, forKey: .attributes)
        try container.encodeIfPresent(f.inputPushChannel, forKey: .inputPushChannel)
    }
}
