import MatchcastCore

/// Where deliveries leave Matchcast: stdout, a webhook, APNs.
public protocol DeliverySink: Sendable {
    /// Short name for logs and metric labels (`stdout`, `webhook`, `apns`).
    var name: String { get }
    /// Hands a batch over. Returns when the sink has taken responsibility for every delivery
    /// (written, acknowledged, or persisted for retry); throws only when it could not.
    func deliver(_ batch: [Delivery]) async throws
    /// Returns once everything handed over has left; throws what went wrong after `deliver` had returned (a sink
    /// that writes behind, as `StdoutSink(writeBehind:)` does). Nothing to do for most sinks.
    func flush() async throws
    /// True for sinks that count `matchcast_deliveries_total` themselves (per delivery, with dead
    /// letters), so the dispatcher does not count them again.
    var countsDeliveries: Bool { get }
    /// False while the sink cannot reach its destination (e.g. no APNs connection can be set up); `/readyz` shows it.
    var isHealthy: Bool { get }
    /// Whether deliveries to targets of `kind` are this sink's to deliver: the push-service sinks take their own
    /// service's (APNs, FCM and Web Push routed by target), the others take every delivery.
    func takes(_ kind: PushTarget.Kind) -> Bool
    /// Whether deliveries of `kind` to the app whose topic is `topic` are this sink's: `takes(kind)`, but for a sink of
    /// several apps' (`AppRoutedSink`), which takes only its apps'.
    func takes(_ kind: PushTarget.Kind, topic: String) -> Bool
    /// The last answer its push service gave for the device token `token`, for sinks that send to devices one token at
    /// a time (APNs, FCM, and a sink of several apps' through theirs); nil for the others.
    func lastAnswer(token: String) -> TokenAnswers.Answer?
}

extension DeliverySink {
    public var countsDeliveries: Bool { false }
    public var isHealthy: Bool { true }
    public func takes(_ kind: PushTarget.Kind) -> Bool { true }
    public func takes(_ kind: PushTarget.Kind, topic: String) -> Bool { takes(kind) }
    public func lastAnswer(token: String) -> TokenAnswers.Answer? { nil }
    public func flush() async throws {}
}

/// A sink's failure that names the deliveries of the batch it did not take: every other one was sent, refused for good
/// (dead-lettered, a dead token) or left alone as not the sink's, and must not be handed to it again. A relay retries
/// `undelivered` alone, so a push that went out is not pushed twice (a goal's alert sounding twice). Empty means
/// the sink cannot tell: the whole batch is retried.
public protocol PartialDeliveryFailure: Error {
    var undelivered: [Delivery] { get }
}
