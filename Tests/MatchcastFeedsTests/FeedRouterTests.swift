import Foundation
import MatchcastFeeds
import Synchronization
import Testing

/// Several feeds behind one router: a match's polls go to the feed that serves it, found by the id's prefix, by the
/// live list that showed it, or by asking each feed that could serve it.
@Suite("FeedRouter: a match's polls go to its feed")
struct FeedRouterTests {
    /// A feed that knows `matches` (answered 200) and nothing else (404), counting the requests for each path.
    final class Feed: FeedTransport {
        let matches: Set<String>
        private let counts = Mutex<[String: Int]>([:])

        init(_ matches: Set<String>) { self.matches = matches }

        func fetch(_ request: FeedRequest) async throws -> FeedResponse {
            counts.withLock { $0[request.path, default: 0] += 1 }
            if request.path == FeedRequest.liveMatches.path {
                return Fixtures.ok(Fixtures.listBody(matches.sorted().map { Fixtures.snapshot(id: $0) }))
            }
            let id = String(request.path.dropFirst("/matches/".count)).removingPercentEncoding ?? ""
            guard matches.contains(id) else { return FeedResponse(status: 404) }
            return Fixtures.ok(Fixtures.matchBody(Fixtures.snapshot(id: id)))
        }

        func requests(_ matchId: String) -> Int { counts.withLock { $0[FeedRequest.match(matchId).path] ?? 0 } }
        var total: Int { counts.withLock { $0.values.reduce(0, +) } }
    }

    /// A feed whose every request fails without an answer.
    struct Unreachable: FeedTransport {
        func fetch(_ request: FeedRequest) async throws -> FeedResponse {
            throw FeedError.transport(URLError(.cannotConnectToHost), path: request.path)
        }
    }

    /// Two ESPN leagues, each knowing one match (`espn:1`, `espn:2`), behind one router.
    static func twoLeagues() -> (premier: Feed, laLiga: Feed, router: FeedRouter) {
        let (premier, laLiga) = (Feed(["espn:1"]), Feed(["espn:2"]))
        return (premier, laLiga, FeedRouter(members: [
            .init(name: "espn:soccer/eng.1", idPrefix: "espn:", transport: premier),
            .init(name: "espn:soccer/esp.1", idPrefix: "espn:", transport: laLiga),
        ]))
    }

    @Test("an id's prefix picks its feed; an id without one goes to the native feed")
    func prefixes() async throws {
        let (espn, nhl, native) = (Feed(["espn:401547417"]), Feed(["nhl:2024030121"]), Feed(["derby"]))
        let router = FeedRouter(members: [
            .init(name: "espn:soccer/eng.1", idPrefix: "espn:", transport: espn),
            .init(name: "nhl", idPrefix: "nhl:", transport: nhl),
            .init(name: "https://feed.example/v1", idPrefix: nil, transport: native),
        ])
        #expect(try await router.fetch(.match("nhl:2024030121")).status == 200)
        #expect(try await router.fetch(.match("espn:401547417")).status == 200)
        #expect(try await router.fetch(.match("derby")).status == 200)
        #expect(nhl.total == 1 && espn.total == 1 && native.total == 1)
        #expect(router.member(serving: "nhl:1") == 1)
        #expect(router.member(serving: "derby") == 2)
    }

    @Test("feeds of ids without a prefix listed before a prefixed one do not take its ids")
    func prefixedFeedOutranksEarlierUnprefixedOnes() async throws {
        let (first, second, espn) = (Feed(["derby"]), Feed([]), Feed(["espn:7"]))
        let router = FeedRouter(members: [
            .init(name: "a", idPrefix: nil, transport: first), .init(name: "b", idPrefix: nil, transport: second),
            .init(name: "espn:soccer/eng.1", idPrefix: "espn:", transport: espn),
        ])
        #expect(router.member(serving: "espn:7") == 2)
        #expect(router.member(serving: "derby") == nil, "two feeds could serve it: not known until listed or found")
        #expect(try await router.fetch(.match("espn:7")).status == 200)
        #expect(first.total == 0 && second.total == 0)
    }

    @Test("an id no feed serves is a 404 naming what the feeds serve, and no feed is asked")
    func noFeedServesIt() async throws {
        let (espn, mlb) = (Feed([]), Feed([]))
        let router = FeedRouter(members: [
            .init(name: "espn:soccer/eng.1", idPrefix: "espn:", transport: espn),
            .init(name: "mlb", idPrefix: "mlb:", transport: mlb),
        ])
        let response = try await router.fetch(.match("derby"))
        #expect(response.status == 404)
        let body = String(decoding: response.body ?? Data(), as: UTF8.self)
        #expect(body.contains("derby") && body.contains("espn:") && body.contains("mlb:"))
        #expect(espn.total == 0 && mlb.total == 0)
    }

    @Test("two feeds of one kind: the one whose live list showed the match serves it, no other is asked")
    func listedMatchesStayWithTheirFeed() async throws {
        let (premier, laLiga, router) = Self.twoLeagues()
        router.listed(["espn:2"], by: 1)
        #expect(router.member(serving: "espn:2") == 1)
        for _ in 0..<3 { #expect(try await router.fetch(.match("espn:2")).status == 200) }
        #expect(laLiga.requests("espn:2") == 3)
        #expect(premier.total == 0)
    }

    @Test("a match no live list showed is asked of each feed in turn; the first that knows it keeps it")
    func unlistedMatchesAreFound() async throws {
        let (premier, laLiga, router) = Self.twoLeagues()
        #expect(router.member(serving: "espn:2") == nil)
        #expect(try await router.fetch(.match("espn:2")).status == 200)
        #expect(premier.requests("espn:2") == 1 && laLiga.requests("espn:2") == 1)
        #expect(router.member(serving: "espn:2") == 1)
        #expect(try await router.fetch(.match("espn:2")).status == 200)
        #expect(premier.requests("espn:2") == 1, "found once, asked of its feed only from then on")
        #expect(laLiga.requests("espn:2") == 2)

        // Known by none: every feed says 404, and so does the router.
        #expect(try await router.fetch(.match("espn:3")).status == 404)
        #expect(premier.requests("espn:3") == 1 && laLiga.requests("espn:3") == 1)
    }

    @Test("a feed that cannot be reached while finding a match is passed over; when none answers, its error is thrown")
    func unreachableFeedsArePassedOver() async throws {
        let laLiga = Feed(["espn:2"])
        let router = FeedRouter(members: [
            .init(name: "espn:soccer/eng.1", idPrefix: "espn:", transport: Unreachable()),
            .init(name: "espn:soccer/esp.1", idPrefix: "espn:", transport: laLiga),
        ])
        #expect(try await router.fetch(.match("espn:2")).status == 200)
        #expect(router.member(serving: "espn:2") == 1)

        let alone = FeedRouter(members: [
            .init(name: "a", idPrefix: nil, transport: Unreachable()),
            .init(name: "b", idPrefix: nil, transport: Unreachable()),
        ])
        await #expect(throws: FeedError.self) { _ = try await alone.fetch(.match("derby")) }
    }

    @Test("a match its feed no longer knows (404) is looked for again at the next poll")
    func aMatchThatLeftItsFeedIsFoundAgain() async throws {
        let (first, second) = (Feed([]), Feed(["m"]))
        let router = FeedRouter(members: [
            .init(name: "a", idPrefix: nil, transport: first),
            .init(name: "b", idPrefix: nil, transport: second),
        ])
        router.listed(["m"], by: 0)
        #expect(try await router.fetch(.match("m")).status == 404)
        #expect(router.member(serving: "m") == nil)
        #expect(try await router.fetch(.match("m")).status == 200)
        #expect(router.member(serving: "m") == 1)
    }

    @Test("one feed: every request goes to it as it is, the live list and unknown ids included")
    func oneFeedPassesEverythingThrough() async throws {
        let feed = Feed(["m"])
        let router = FeedRouter(feed)
        #expect(try await router.fetch(.liveMatches).status == 200)
        #expect(try await router.fetch(.match("nhl:1")).status == 404)
        #expect(feed.total == 2)
        #expect(router.member(serving: "anything") == 0)
    }
}

@Suite("FeedSpec: several feeds")
struct FeedSpecListTests {
    @Test("a comma-separated list parses each feed; the same feed twice, or none, is refused")
    func lists() throws {
        let specs = try FeedSpec.list(parsing: " espn:soccer/eng.1 , nhl,http://127.0.0.1:8090 ")
        #expect(specs == [try FeedSpec(parsing: "espn:soccer/eng.1"), try FeedSpec(parsing: "nhl"), .native(baseURL: "http://127.0.0.1:8090")])
        #expect(specs.map(\.idPrefix) == ["espn:", "nhl:", nil])
        #expect(throws: FeedError.self) { try FeedSpec.list(parsing: "nhl,nhl") }
        #expect(throws: FeedError.self) { try FeedSpec.list(parsing: " , ") }
        #expect(throws: FeedError.self) { try FeedSpec.list(parsing: "nhl,gopher://x") }
    }

    @Test("a feed's public name carries no user, password or query of its URL")
    func publicNames() throws {
        #expect(try FeedSpec(parsing: "https://user:secret@feed.example:8443/v1?key=abc").publicName == "https://feed.example:8443/v1")
        #expect(try FeedSpec(parsing: "espn:soccer/eng.1@http://u:p@localhost:9000").publicName == "espn:soccer/eng.1@http://localhost:9000")
        #expect(try FeedSpec(parsing: "espn:soccer/eng.1").publicName == "espn:soccer/eng.1")
        #expect(try FeedSpec(parsing: "nhl").publicName == "nhl")
        #expect(try FeedSpec(parsing: "mlb").publicName == "mlb")
        #expect(try FeedSpec(parsing: "fake?speed=60").publicName == "fake")
    }
}
