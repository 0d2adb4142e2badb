import MatchcastCore
import MatchcastDelivery
import Synchronization

/// A sink that keeps every delivery it is given, in order, for tests to inspect.
public final class CapturingSink: DeliverySink, Sendable {
    public let name = "capture"
    private let captured = Mutex<[Delivery]>([])

    public init() {}

    public func deliver(_ batch: [Delivery]) async throws {
        captured.withLock { $0.append(contentsOf: batch) }
    }

    /// Everything delivered so far.
    public var deliveries: [Delivery] { captured.withLock { $0 } }

    /// The NDJSON bytes a stdout sink would have written for the same deliveries.
    public var ndjson: [UInt8] {
        deliveries.reduce(into: []) { out, delivery in
            delivery.appendJSON(to: &out)
            out.append(UInt8(ascii: "\n"))
        }
    }
}
