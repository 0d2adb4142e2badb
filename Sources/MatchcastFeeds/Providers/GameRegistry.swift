import Foundation
import MatchcastCore
import Synchronization

/// Which provider's match is which canonical game: learnt from the providers' live lists and schedules.
///
/// A provider's match joins the game of the same key (sport, day, teams) whose start is within `startTolerance` of
/// its own and that this provider does not serve yet; otherwise it starts a new game. The first game of a key keeps
/// the plain id, a second one (a doubleheader) gets `:2`, in the order of their starts when one answer lists both.
/// An id, once given, is never given to another game.
final class GameRegistry: Sendable {
    struct Game: Sendable {
        var key: GameIdentity.Key
        var startsAt: Date?
        /// Provider index → that provider's id of the match.
        var members: [Int: String]
    }

    private struct State {
        var games: [String: Game] = [:]
        var byKey: [GameIdentity.Key: [String]] = [:]
        var byMember: [Member: String] = [:]
    }

    private struct Member: Hashable {
        var provider: Int
        var id: String
    }

    let identity: GameIdentity
    let startTolerance: TimeInterval
    /// The most games remembered; the table starts again when full (a forgotten game is found again in a schedule).
    static let capacity = 100_000
    private let state = Mutex(State())

    init(identity: GameIdentity, startTolerance: TimeInterval) {
        self.identity = identity
        self.startTolerance = startTolerance
    }

    /// The canonical ids of `snapshots`, provider `provider`'s matches, registering those not known yet.
    func register(_ snapshots: [MatchSnapshot], provider: Int, fallbackDay: String) -> [String] {
        let order = snapshots.indices.sorted {
            (snapshots[$0].startsAt ?? .distantFuture, $0) < (snapshots[$1].startsAt ?? .distantFuture, $1)
        }
        var ids = Array(repeating: "", count: snapshots.count)
        state.withLock { state in
            if state.games.count + snapshots.count > Self.capacity { state = State() }
            for index in order {
                ids[index] = register(snapshots[index], provider: provider, fallbackDay: fallbackDay, in: &state)
            }
        }
        return ids
    }

    private func register(_ snapshot: MatchSnapshot, provider: Int, fallbackDay: String, in state: inout State) -> String {
        let member = Member(provider: provider, id: snapshot.id)
        if let known = state.byMember[member] { return known }
        let key = identity.key(of: snapshot, fallbackDay: fallbackDay)
        let games = state.byKey[key] ?? []
        let joined = games.first { id in
            guard let game = state.games[id], game.members[provider] == nil else { return false }
            guard let mine = snapshot.startsAt, let theirs = game.startsAt else { return games.count == 1 }
            return abs(mine.timeIntervalSince(theirs)) <= startTolerance
        }
        let id = joined ?? identity.id(of: key, number: games.count + 1)
        if joined == nil {
            state.byKey[key, default: []].append(id)
            state.games[id] = Game(key: key, startsAt: snapshot.startsAt, members: [:])
        }
        state.games[id]?.members[provider] = snapshot.id
        if state.games[id]?.startsAt == nil { state.games[id]?.startsAt = snapshot.startsAt }
        state.byMember[member] = id
        return id
    }

    /// Provider index → its id of game `id`; empty when the game is not known.
    func members(of id: String) -> [Int: String] {
        state.withLock { $0.games[id]?.members ?? [:] }
    }

    /// Provider `provider` no longer knows its match of game `id` (it answered 404): it is looked for again.
    func forget(provider: Int, of id: String) {
        state.withLock { state in
            guard let member = state.games[id]?.members.removeValue(forKey: provider) else { return }
            state.byMember[Member(provider: provider, id: member)] = nil
        }
    }
}
