import MatchcastCore
import MatchcastStore

/// Commands of one kind waiting for `LifecycleManager`'s serial gate. The first of them to get through the gate runs
/// every one queued by then, their records saved in one store write; the others find their outcome when their turn
/// comes. So commands from many API clients at once cost one transaction, not one each. `Output` is what a command
/// that succeeds answers with.
struct GateQueue<Command, Output> {
    /// A queued command; its ticket names its outcome.
    @dynamicMemberLookup
    struct Request {
        let ticket: Int
        let command: Command

        subscript<Value>(dynamicMember field: KeyPath<Command, Value>) -> Value { command[keyPath: field] }
    }

    private var waiting: [Request] = []
    private var outcomes: [Int: Result<Output, ServiceError>] = [:]
    private var nextTicket = 0

    /// Commands queued and not yet run.
    var count: Int { waiting.count }

    /// Queues a command; its ticket names its outcome.
    mutating func add(_ command: Command) -> Int {
        defer { nextTicket += 1 }
        waiting.append(Request(ticket: nextTicket, command: command))
        return nextTicket
    }

    /// Every queued command, in arrival order.
    mutating func takeAll() -> [Request] {
        defer { waiting = [] }
        return waiting
    }

    mutating func settle(_ ticket: Int, _ outcome: Result<Output, ServiceError>) {
        outcomes[ticket] = outcome
    }

    /// The outcome of a command another caller ran, once (nil while it has not run).
    mutating func outcome(_ ticket: Int) -> Result<Output, ServiceError>? {
        outcomes.removeValue(forKey: ticket)
    }
}

/// A queued command about one match.
protocol QueuedForMatch {
    var matchId: String { get }
}

/// A follow waiting for the gate.
struct QueuedFollow: QueuedForMatch {
    let deviceId: String
    let matchId: String
    /// Nil: that of the device's push-to-start token (production without one), read when the follow runs.
    let environment: APNsEnvironment?
}

/// An update token reported by an app, waiting for the gate.
struct QueuedToken: QueuedForMatch {
    let activityId: String
    let deviceId: String
    let matchId: String
    let token: String
    let environment: APNsEnvironment
}

extension GateQueue where Command: QueuedForMatch {
    /// Every queued command, in arrival order, grouped by match (matches in order of their first command): a batch
    /// saves one match's records, under that match's lease.
    mutating func takeAllByMatch() -> [(matchId: String, requests: [Request])] {
        var groups: [(matchId: String, requests: [Request])] = []
        var position: [String: Int] = [:]
        for request in takeAll() {
            if let at = position[request.matchId] {
                groups[at].requests.append(request)
            } else {
                position[request.matchId] = groups.count
                groups.append((request.matchId, [request]))
            }
        }
        return groups
    }
}
