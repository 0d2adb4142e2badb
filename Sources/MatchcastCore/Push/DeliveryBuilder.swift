import Foundation

/// Turns the lifecycle's push intents into deliveries: resolves the recipient's token, names the
/// delivery, and encodes each distinct `aps` once, however many activities receive it.
public struct DeliveryBuilder: Sendable {
    /// `<bundle id>.push-type.liveactivity`: the topic of a delivery not given another (the default app's).
    public let topic: String
    private var rng: SeededGenerator
    private var lastAPS: APS?
    private var lastPayload: PushPayload?
    /// The last common part made per topic: the deliveries of one update to several apps' devices, interleaved,
    /// still share one per app.
    private var lastCommon: Delivery.Common?
    private var otherCommons: [String: Delivery.Common] = [:]
    /// The last kick-off's start (`StartPayloadTemplate.key`), encoded once; no template when it could not be cut.
    private var startTemplate: (key: APS, template: StartPayloadTemplate?)?

    /// `seed` makes the ids reproducible (replay); pass a random seed in production.
    public init(bundleId: String, seed: UInt64) {
        topic = APNsHeaders.topic(bundleId: bundleId)
        rng = SeededGenerator(seed: seed)
    }

    /// The delivery for `intent`, or nil when it goes to a push-to-start token the device does not have. A
    /// push-to-start token or update token on a `DirectAddress` goes to that address (FCM, Web Push). `topic` is the
    /// recipient's app's (`AppCatalog.topic(ofDevice:)`); nil (a broadcast channel, one device) the builder's own.
    public mutating func build(
        _ intent: PushIntent, matchId: String, activityId: String, pushToStartToken: String?, topic: String? = nil,
        now: Date
    ) throws(PayloadTooLarge) -> Delivery? {
        let target: PushTarget
        switch intent.recipient {
        case .pushToStart:
            guard let token = pushToStartToken else { return nil }
            target = DirectAddress(stored: token)?.target ?? PushTarget(kind: .pushToStartToken, value: token)
        case .updateToken(let token):
            target = DirectAddress(activityToken: token)?.target ?? PushTarget(kind: .updateToken, token: token)
        case .channel(let channelId):
            target = PushTarget(kind: .channel, value: channelId)
        }
        let common = try common(
            matchId: matchId, topic: topic ?? self.topic, aps: intent.aps, priority: intent.priority, expiration: intent.expiration)
        let id = Identifier.make(prefix: "dlv_", milliseconds: Int64(now.timeIntervalSince1970 * 1000), using: &rng)
        return Delivery(id: id, activityId: activityId, target: target, common: common)
    }

    /// A new activity id, from the same reproducible generator.
    public mutating func makeActivityId(now: Date) -> String {
        Identifier.make(prefix: "act_", milliseconds: Int64(now.timeIntervalSince1970 * 1000), using: &rng)
    }

    /// The match, headers and payload of a delivery: the previous delivery's when they are the same, so all the
    /// deliveries of one update share one.
    private mutating func common(
        matchId: String, topic: String, aps: APS, priority: Int, expiration: Int
    ) throws(PayloadTooLarge) -> Delivery.Common {
        let payload = try payload(for: aps)
        let apns = APNsHeaders(topic: topic, priority: priority, expiration: expiration)
        let isDefault = topic == self.topic
        let last = isDefault ? lastCommon : otherCommons[topic]
        // The payload's bytes are the previous delivery's own buffer when unchanged, so `==` is a pointer check.
        if let last, last.matchId == matchId, last.apns == apns, last.payload.bytes == payload.bytes {
            return last
        }
        let common = Delivery.Common(matchId: matchId, apns: apns, payload: payload)
        if isDefault { lastCommon = common } else { otherCommons[topic] = common }
        return common
    }

    private mutating func payload(for aps: APS) throws(PayloadTooLarge) -> PushPayload {
        if let lastAPS, let lastPayload, lastAPS == aps { return lastPayload }
        // A start: the same as the kick-off's other starts but for its activity id.
        if let key = StartPayloadTemplate.key(for: aps), let activityId = aps.attributes?.activityId {
            if startTemplate?.key != key { startTemplate = (key, try StartPayloadTemplate(key)) }
            if let payload = startTemplate?.template?.payload(for: aps, activityId: activityId) { return payload }
        }
        let payload = try PushPayload(aps)
        lastAPS = aps
        lastPayload = payload
        return payload
    }
}
