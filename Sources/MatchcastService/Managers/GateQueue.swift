import MatchcastCore
import MatchcastStore

/// Commands of one kind waiting for `LifecycleManager`'s gate of their match. The first of a match to get through the
/// gate runs every one of that match queued by then, their records saved in one store write; the others find their
/// outcome when their turn comes. So commands from many API clients at once cost one transaction, not one each.
/// `Output` is what a command that succeeds answers with.
struct GateQueue<Command: QueuedForMatch, Output> {
    /// A queued command; its ticket names its outcome.
    @dynamicMemberLookup
    struct Request {
        let ticket: Int
        let command: Command

        subscript<Value>(dynamicMember field: KeyPath<Command, Value>) -> Value { command[keyPath: field] }
    }

    /// Queued commands by match, each match's in arrival order.
    private var waiting: [String: [Request]] = [:]
    private var outcomes: [Int: Result<Output, ServiceError>] = [:]
    private var nextTicket = 0

    /// Commands queued and not yet run.
    var count: Int { waiting.values.reduce(0) { $0 + $1.count } }

    /// Queues a command; its ticket names its outcome.
    mutating func add(_ command: Command) -> Int {
        defer { nextTicket += 1 }
        waiting[command.matchId, default: []].append(Request(ticket: nextTicket, command: command))
        return nextTicket
    }

    /// The queued commands of one match, in arrival order (a batch saves one match's records, under its lease).
    mutating func takeAll(matchId: String) -> [Request] {
        waiting.removeValue(forKey: matchId) ?? []
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
