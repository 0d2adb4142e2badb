import Foundation
import MatchcastCore
import MatchcastFeeds
import Synchronization
import Testing

/// Finding a match by what a user types, in what the feeds list now.
@Suite("feeds search: MatchSearch and FeedCatalog")
struct MatchSearchTests {
    static func snapshot(_ id: String, _ home: String, _ away: String, competition: String? = nil, venue: String? = nil,
                         startsAt: Date? = nil) -> MatchSnapshot {
        MatchSnapshot(
            id: id, sport: .football, status: .scheduled, startsAt: startsAt, competition: competition, venue: venue,
            home: Team(id: "h", name: home, short: String(home.prefix(3)).uppercased()),
            away: Team(id: "a", name: away, short: String(away.prefix(3)).uppercased()),
            score: .empty(for: .football))
    }

    @Test("every word must appear in the teams, competition, venue or id; case and accents do not matter")
    func words() throws {
        let derby = Self.snapshot("espn:401547417", "Atlético Madrid", "Real Madrid", competition: "LaLiga", venue: "Metropolitano")
        for query in ["atletico", "ATLÉTICO real", "madrid laliga", "metropolitano", "401547417", "atl rea"] {
            #expect(try #require(MatchSearch(query)).matches(derby), "\(query)")
        }
        for query in ["barcelona", "atletico barcelona", "premier"] {
            #expect(try #require(MatchSearch(query)).matches(derby) == false, "\(query)")
        }
        #expect(MatchSearch("   ") == nil)
    }

    /// A native feed answering its live list and its schedule of one day from fixed bodies; 404 for the rest.
    struct Feed: FeedTransport {
        var live: [String]
        var schedule: [String: [String]]
        var failing = false

        func fetch(_ request: FeedRequest) async throws -> FeedResponse {
            if failing { throw FeedError.timeout(path: request.path) }
            if request.path == FeedRequest.liveMatches.path {
                return FeedResponse(status: 200, body: Fixtures.listBody(live))
            }
            if request.resource == "/schedule", let date = request.queryValue("date"), let matches = schedule[date] {
                return FeedResponse(status: 200, body: Fixtures.scheduleBody(date: date, matches))
            }
            return FeedResponse(status: 404)
        }
    }

    @Test("each feed's live list and schedule, a match in both listed once; a feed without schedules is no problem, a feed that fails is named")
    func catalog() async throws {
        let first = Feed(
            live: [Fixtures.snapshot(id: "live-1")],
            schedule: ["2026-04-21": [Fixtures.snapshot(id: "live-1", status: "scheduled"), Fixtures.snapshot(id: "later-1", status: "scheduled")]])
        let noSchedules = Feed(live: [Fixtures.snapshot(id: "live-2")], schedule: [:])
        let router = FeedRouter(members: [
            .init(name: "first", idPrefix: nil, transport: first),
            .init(name: "second", idPrefix: "espn:", transport: noSchedules),
            .init(name: "down", idPrefix: "nhl:", transport: Feed(live: [], schedule: [:], failing: true)),
        ])
        let (listings, problems) = await FeedCatalog.gather(router, dates: ["2026-04-21"])
        #expect(Set(listings.map { "\($0.feed)/\($0.snapshot.id)" }) == ["first/live-1", "first/later-1", "second/live-2"])
        #expect(listings.first { $0.snapshot.id == "live-1" }?.snapshot.status == .live, "as the live list has it")
        #expect(problems.map(\.feed) == ["down", "down"], "its live list and its schedule: \(problems)")
        #expect(problems.allSatisfy { $0.error.reason == "timeout" })
    }
}
