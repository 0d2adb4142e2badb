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

    // MARK: Hashable, Codable: the fields'

    public static func == (lhs: APS, rhs: APS) -> Bool {
        lhs.storage === rhs.storage || lhs.storage.fields == rhs.storage.fields
    }

    public func hash(into hasher: inout Hasher) {
        storage.fields.hash(into: &hasher)
    }

    public init(from decoder: any Decoder) throws {
        storage = Storage(try Fields(from: decoder))
    }

    public func encode(to encoder: any Encoder) throws {
        try storage.fields.encode(to: encoder)
    }
}
