import MatchcastCore

/// Where deliveries go that a webhook refused for good (a 4xx other than 429): they are not retried.
public protocol DeadLetterRecorder: Sendable {
    /// Keeps `deliveries` with the refusing status and (the start of) the response body.
    func record(_ deliveries: [Delivery], status: Int, body: String) async
}

/// Dead letters kept in memory, in the order they came, for tests and `follow`.
public actor InMemoryDeadLetters: DeadLetterRecorder {
    /// One refused request.
    public struct Entry: Sendable, Hashable {
        public var deliveries: [Delivery]
        public var status: Int
        public var body: String
    }

    /// Every refused request so far.
    public private(set) var entries: [Entry] = []

    public init() {}

    /// Every dead-lettered delivery so far, in order.
    public var deliveries: [Delivery] { entries.flatMap(\.deliveries) }

    public func record(_ deliveries: [Delivery], status: Int, body: String) {
        entries.append(Entry(deliveries: deliveries, status: status, body: body))
    }
}
