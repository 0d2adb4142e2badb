/// The push service answered 404 or 410 for the subscription: the browser unsubscribed, the subscription expired,
/// or the user took the site's notification permission away. Nothing sent to it can arrive again; the web app must
/// subscribe anew and hand over the new subscription.
///
/// `WebPushSink.subscriptionGone` holds it from then on, every later delivery is dead-lettered with it, and
/// `flush()` throws it, so a command can say so and exit non-zero.
public struct WebPushSubscriptionGone: Error, Sendable, Hashable, CustomStringConvertible {
    /// 404 or 410.
    public let status: Int
    /// `scheme://host[:port]` of the endpoint (never its path).
    public let origin: String

    public init(status: Int, origin: String) {
        self.status = status
        self.origin = origin
    }

    public var description: String {
        "the push service \(origin) answered \(status): the browser subscription is gone (unsubscribed, expired, "
            + "or notifications were blocked for the site); subscribe again in the browser and pass the new subscription"
    }
}
