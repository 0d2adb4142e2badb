import Foundation
import MatchcastCore

/// A delivery a sink refused for good (a webhook's 4xx other than 429, an APNs rejection that no retry can fix).
/// Kept for the operator (`GET /v1/admin/dead-letters`), never retried.
public struct DeadLetter: Sendable, Hashable {
    public var delivery: Delivery
    /// The sink that refused it (`webhook`, `apns`).
    public var sink: String
    /// The HTTP status of the refusal.
    public var status: Int
    /// Why, as the receiver said it (the start of the response body, or APNs' reason).
    public var reason: String
    public var recordedAt: Date

    public init(delivery: Delivery, sink: String, status: Int, reason: String, recordedAt: Date) {
        self.delivery = delivery
        self.sink = sink
        self.status = status
        self.reason = String(reason.prefix(Self.maxReasonLength))
        self.recordedAt = recordedAt
    }

    /// Longer reasons are cut: a receiver's error page is not worth keeping whole.
    public static let maxReasonLength = 512
}
