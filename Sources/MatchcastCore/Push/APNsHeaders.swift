/// The APNs request headers a delivery would be sent with (docs/formats.md, "Deliveries": `apns`).
public struct APNsHeaders: Sendable, Hashable, Codable {
    public var pushType: String
    /// `<bundle id>.push-type.liveactivity`.
    public var topic: String
    /// 10 for key events and start/end, 5 for routine updates.
    public var priority: Int
    /// Unix seconds after which APNs stops trying.
    public var expiration: Int

    public init(topic: String, priority: Int, expiration: Int, pushType: String = "liveactivity") {
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
    }

    enum CodingKeys: String, CodingKey {
        case pushType = "push-type"
        case topic, priority, expiration
    }

    /// The topic for a bundle id.
    public static func topic(bundleId: String) -> String { bundleId + ".push-type.liveactivity" }
}
