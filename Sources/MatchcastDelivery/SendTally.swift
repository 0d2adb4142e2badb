/// What became of a push sink's deliveries, queue by queue (the APNs sink's per device token, the FCM sink's per
/// registration token and match), summed over the queues of one `deliver`.
struct SendTally<Item: Sendable, Failure: Error & Sendable>: Sendable {
    var delivered = 0
    var invalid = 0
    var deadLettered = 0
    /// Neither sent nor refused for good: what the sink throws back (`PartialDeliveryFailure.undelivered`).
    var undelivered: [Item] = []
    /// Queues that gave up (their retries ran out).
    var failedQueues = 0
    /// The last reason a queue gave up.
    var problem: String?
    /// A failure that stopped every queue (FCM: no access token could be had); `Never` for a sink without one.
    var failure: Failure?

    mutating func merge(_ other: Self) {
        delivered += other.delivered
        invalid += other.invalid
        deadLettered += other.deadLettered
        undelivered += other.undelivered
        failedQueues += other.failedQueues
        problem = other.problem ?? problem
        failure = other.failure ?? failure
    }
}
