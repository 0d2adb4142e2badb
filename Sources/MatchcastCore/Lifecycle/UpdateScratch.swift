/// What one activity of a fan-out leaves for the next as each takes the same update
/// (`ActivityLifecycle.matchChanged(_:now:policy:scratch:)`): the buffer its actions go into, and the `aps` of the last
/// update it sent. The activities of a fan-out send the same `aps` (the same content, alert, timestamp and stale date),
/// so the next one's is that same instance rather than a new one equal to it, and the builder that turns them into
/// deliveries finds its payload by identity (`DeliveryBuilder`).
public struct UpdateScratch: Sendable {
    /// The last activity's actions, in order.
    public internal(set) var actions: [ActivityAction] = []
    /// The `aps` of the last update sent through this scratch.
    var lastUpdate: APS?

    public init() {}

    mutating func send(_ intent: PushIntent) {
        lastUpdate = intent.aps
        actions.append(.send(intent))
    }
}
