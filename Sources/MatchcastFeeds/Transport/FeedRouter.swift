import Foundation
import Synchronization

/// Several feeds polled by one broker (`--feed` given more than once): each feed keeps its own live list, polled on
/// its own timing, and a match's polls go to the feed that serves the match.
///
/// A match id names its feed by its prefix (`mlb:`, `nhl:`, `espn:`); an id without one belongs to a native or the
/// fake feed. When several feeds could serve an id (two ESPN leagues, two native feeds), the one whose live list
/// last listed the match serves it; a match no live list has shown yet is asked of each in the order configured,
/// and the first that does not answer 404 keeps it. A feed that hangs or fails delays only its own matches: each
/// request goes to one feed, on that feed's own connections.
public final class FeedRouter: FeedTransport {
    /// One configured feed.
    public struct Member: Sendable {
        /// How logs, `/readyz` and metrics name it (`FeedSpec.publicName`): no credentials.
        public let name: String
        /// The prefix of the ids it serves; nil: ids without a known prefix.
        public let idPrefix: String?
        public let transport: any FeedTransport
        /// Whether each entry of its live list is the match's whole snapshot, as `/matches/{id}` answers at that
        /// moment (a native or the fake feed), so that the list can stand in for the matches' own polls. An
        /// adapter whose match answer adds detail to its list (ESPN's summary, NHL's play-by-play) says no.
        public let listCarriesWholeMatches: Bool

        public init(name: String, idPrefix: String?, transport: any FeedTransport, listCarriesWholeMatches: Bool = false) {
            self.name = name
            self.idPrefix = idPrefix
            self.transport = transport
            self.listCarriesWholeMatches = listCarriesWholeMatches
        }
    }

    public let members: [Member]
    /// Which member serves each match that more than one could serve, as last listed or found.
    private let owners = Mutex<[String: Int]>([:])
    /// The most matches remembered; the table starts again when full (a forgotten match is found again by asking).
    static let ownerCapacity = 100_000

    public init(members: [Member]) {
        precondition(!members.isEmpty, "a router needs at least one feed")
        self.members = members
    }

    /// One feed alone: every request goes to it.
    public convenience init(_ transport: any FeedTransport, name: String = "feed", listCarriesWholeMatches: Bool = false) {
        self.init(members: [Member(name: name, idPrefix: nil, transport: transport, listCarriesWholeMatches: listCarriesWholeMatches)])
    }

    /// The member `index`'s live list showed these matches: they are its to serve.
    public func listed(_ matchIds: some Sequence<String>, by index: Int) {
        guard members.count > 1 else { return }
        remember(matchIds.filter { sole(for: $0) == nil }, index)
    }

    /// The member that serves `matchId` as far as known now: its only candidate, or the one that listed or answered
    /// for it; nil while that is not known. Every poll asks (for its feed's health): no allocation on the way.
    public func member(serving matchId: String) -> Int? {
        guard members.count > 1 else { return 0 }
        if let sole = sole(for: matchId) { return sole }
        return owners.withLock { $0[matchId] }
    }

    /// The members that could serve `id`: those whose prefix it carries, else those that take ids without one.
    func candidates(for id: String) -> [Int] {
        let prefixed = carriesPrefix(id)
        return members.indices.filter { Self.member(members[$0], takes: id, prefixed: prefixed) }
    }

    /// The one member that could serve `id` (`candidates(for:)` without building the list); nil for none or several.
    private func sole(for id: String) -> Int? {
        let prefixed = carriesPrefix(id)
        var found: Int?
        for index in members.indices where Self.member(members[index], takes: id, prefixed: prefixed) {
            if found != nil { return nil }
            found = index
        }
        return found
    }

    /// Whether some member's prefix is on `id`: then only such members may serve it.
    private func carriesPrefix(_ id: String) -> Bool {
        members.contains { $0.idPrefix.map(id.hasPrefix) ?? false }
    }

    private static func member(_ member: Member, takes id: String, prefixed: Bool) -> Bool {
        member.idPrefix.map(id.hasPrefix) ?? !prefixed
    }

    /// A match's request goes to the member serving it; anything else to the first member.
    public func fetch(_ request: FeedRequest) async throws -> FeedResponse {
        guard members.count > 1, let matchId = Self.matchId(in: request) else {
            return try await members[0].transport.fetch(request)
        }
        if let owner = member(serving: matchId) {
            let response = try await members[owner].transport.fetch(request)
            // The match left its feed (a 404 where it was listed): the others are asked from the next poll on.
            if response.status == 404, sole(for: matchId) == nil { forget(matchId) }
            return response
        }
        let candidates = candidates(for: matchId)
        guard !candidates.isEmpty else {
            let served = members.compactMap(\.idPrefix).map { "\($0)…" } + (members.contains { $0.idPrefix == nil } ? ["ids without a prefix"] : [])
            return NativeFeedBody.error(
                status: 404, code: "not_found",
                message: "no configured feed serves '\(matchId.prefix(60))' (the feeds serve \(served.joined(separator: ", ")))")
        }
        return try await find(matchId, request: request, among: candidates)
    }

    /// Asks each candidate in turn; the first that knows the match keeps it. All 404: the last 404. No answer from
    /// any: the first error.
    private func find(_ matchId: String, request: FeedRequest, among candidates: [Int]) async throws -> FeedResponse {
        var notFound: FeedResponse?
        var firstError: (any Error)?
        for index in candidates {
            do {
                let response = try await members[index].transport.fetch(request)
                if response.status == 404 {
                    notFound = response
                    continue
                }
                remember([matchId], index)
                return response
            } catch {
                if Task.isCancelled { throw error }
                firstError = firstError ?? error
            }
        }
        if let notFound { return notFound }
        if let firstError { throw firstError }
        return NativeFeedBody.error(status: 404, code: "not_found", message: "no feed to ask for '\(matchId.prefix(60))'")
    }

    private func remember(_ matchIds: [String], _ index: Int) {
        guard !matchIds.isEmpty else { return }
        owners.withLock { owners in
            for id in matchIds {
                if owners.count >= Self.ownerCapacity { owners.removeAll(keepingCapacity: true) }
                owners[id] = index
            }
        }
    }

    private func forget(_ matchId: String) {
        _ = owners.withLock { $0.removeValue(forKey: matchId) }
    }

    /// The match id of a `/matches/{id}` request, percent-decoded.
    static func matchId(in request: FeedRequest) -> String? {
        let resource = request.resource
        guard resource.hasPrefix("/matches/") else { return nil }
        let encoded = resource.dropFirst("/matches/".count)
        guard !encoded.isEmpty else { return nil }
        return String(encoded).removingPercentEncoding ?? String(encoded)
    }
}
