import MatchcastCore

extension APNsSink {
    /// The path of a broadcast for the app whose topic is `<bundle id>.push-type.liveactivity`.
    static func broadcastPath(topic: String) -> String {
        let suffix = ".push-type.liveactivity"
        let bundleId = topic.hasSuffix(suffix) ? String(topic.dropLast(suffix.count)) : topic
        return "/4/broadcasts/apps/" + bundleId
    }

    /// The request of a delivery whose target is a broadcast channel (iOS 18): `POST
    /// /4/broadcasts/apps/<bundle id>` with `apns-channel-id`, `apns-push-type: liveactivity`,
    /// `apns-priority`, `apns-expiration` and an `apns-request-id` that stays the same across
    /// retries (the item's id); no `apns-topic` (the bundle id is in the path). The body is the
    /// payload, as for a device.
    ///
    /// Broadcasts go through `send` like device pushes, one queue per channel (in order; channels
    /// side by side), after the device pushes of the batch, and their answers mean the same, except
    /// that a refused channel (it is gone, or malformed) is not a dead token: the delivery is
    /// dead-lettered, and the broker deletes its channels on its own schedule.
    static func broadcastRequest(_ item: Item, jwt: String) -> APNsRequest {
        let delivery = item.delivery
        let head = APNsRequestHead(fields: [
            ("authorization", "bearer " + jwt),
            ("apns-push-type", delivery.apns.pushType),
            ("apns-channel-id", delivery.target.value),
            ("apns-priority", String(delivery.apns.priority)),
            ("apns-expiration", String(delivery.apns.expiration)),
            ("apns-request-id", item.apnsID),
            ("content-type", "application/json"),
        ])
        return APNsRequest(head: head, path: broadcastPath(topic: delivery.apns.topic), apnsID: nil, body: item.body)
    }
}
