/// The `aps` dictionary of an ActivityKit push, exactly as APNs receives it.
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

    /// Unix seconds; only grows per activity.
    public var timestamp: Int
    public var event: ActivityEvent
    public var contentState: ContentState
    public var staleDate: Int?
    public var dismissalDate: Int?
    public var alert: Alert?
    public var attributesType: String?
    public var attributes: ActivityAttributes?

    public init(
        timestamp: Int, event: ActivityEvent, contentState: ContentState, staleDate: Int? = nil,
        dismissalDate: Int? = nil, alert: Alert? = nil, attributes: ActivityAttributes? = nil
    ) {
        self.timestamp = timestamp
        self.event = event
        self.contentState = contentState
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.alert = alert
        self.attributes = attributes
        self.attributesType = attributes == nil ? nil : ActivityAttributes.typeName
    }

    enum CodingKeys: String, CodingKey {
        case timestamp, event, alert, attributes
        case contentState = "content-state"
        case staleDate = "stale-date"
        case dismissalDate = "dismissal-date"
        case attributesType = "attributes-type"
    }
}
