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
    public var ndjson: [UInt8] { deliveries.ndjson }
}

extension Array where Element == Delivery {
    /// The NDJSON bytes a stdout sink writes for these deliveries.
    public var ndjson: [UInt8] {
        reduce(into: []) { out, delivery in
            delivery.appendJSON(to: &out)
            out.append(UInt8(ascii: "\n"))
        }
    }
}

/// A sink that fails while told to, then keeps what it is given: a receiver that goes away and comes back.
public final class FlakySink: DeliverySink, Sendable {
    public struct Down: Error, CustomStringConvertible {
        public var description: String { "sink is down (test)" }
    }

    public let name: String
    /// Calls that fail whatever `isDown` says, from the first: a receiver that is down when the sender starts.
    private let failingFirst: Int
    private let state = Mutex<(down: Bool, attempts: Int, delivered: [Delivery])>((false, 0, []))

    public init(name: String = "flaky", failingFirst: Int = 0) {
        self.name = name
        self.failingFirst = failingFirst
    }

    public func deliver(_ batch: [Delivery]) async throws {
        try state.withLock { state in
            state.attempts += 1
            if state.down || state.attempts <= failingFirst { throw Down() }
            state.delivered.append(contentsOf: batch)
        }
    }

    /// Whether `deliver` throws.
    public var isDown: Bool {
        get { state.withLock { $0.down } }
        set { state.withLock { $0.down = newValue } }
    }

    /// Calls to `deliver`, failed or not.
    public var attempts: Int { state.withLock { $0.attempts } }

    /// Everything accepted so far, in order.
    public var deliveries: [Delivery] { state.withLock { $0.delivered } }
}
