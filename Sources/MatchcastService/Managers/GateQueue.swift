import MatchcastCore
import MatchcastStore

/// Follows waiting for `LifecycleManager`'s serial gate. The first of them to get through the gate runs every one
/// queued by then, their new activities saved in one store write; the others find their outcome when their turn
/// comes. So follows from many API clients at once cost one transaction, not one each.
struct FollowQueue {
    struct Request {
        let ticket: Int
        let deviceId: String
        let matchId: String
        let environment: APNsEnvironment
    }

    private var waiting: [Request] = []
    private var outcomes: [Int: Result<ActivityRecord, ServiceError>] = [:]
    private var nextTicket = 0

    /// Follows queued and not yet run.
    var count: Int { waiting.count }

    /// Queues a follow; its ticket names its outcome.
    mutating func add(deviceId: String, matchId: String, environment: APNsEnvironment) -> Int {
        defer { nextTicket += 1 }
        waiting.append(Request(ticket: nextTicket, deviceId: deviceId, matchId: matchId, environment: environment))
        return nextTicket
    }

    /// Every queued follow, in arrival order, grouped by match (matches in order of their first follow).
    mutating func takeAll() -> [(matchId: String, requests: [Request])] {
        var groups: [(matchId: String, requests: [Request])] = []
        var position: [String: Int] = [:]
        for request in waiting {
            if let at = position[request.matchId] {
                groups[at].requests.append(request)
            } else {
                position[request.matchId] = groups.count
                groups.append((request.matchId, [request]))
            }
        }
        waiting = []
        return groups
    }

    mutating func settle(_ ticket: Int, _ outcome: Result<ActivityRecord, ServiceError>) {
        outcomes[ticket] = outcome
    }

    /// The outcome of a follow another caller ran, once (nil while it has not run).
    mutating func outcome(_ ticket: Int) -> Result<ActivityRecord, ServiceError>? {
        outcomes.removeValue(forKey: ticket)
    }
}
