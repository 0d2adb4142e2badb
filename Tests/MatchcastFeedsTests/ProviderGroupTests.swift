import Foundation
import MatchcastCore
import MatchcastFeeds
import Synchronization
import Testing

/// A provider group's identity, lists and budgets, over scripted providers.
@Suite("Provider group: canonical games, merged lists, budgets")
struct ProviderGroupTests {
    /// 2026-04-21T13:05:00Z.
    static let noon = Date(timeIntervalSince1970: 1_776_776_700)

    static func snapshot(_ id: String, _ home: String, _ away: String, at start: Date, score: (Int, Int) = (0, 0)) -> MatchSnapshot {
        MatchSnapshot(
            id: id, sport: .baseball, status: .live, startsAt: start, competition: "MLB",
            home: Team(id: "h", name: home), away: Team(id: "a", name: away),
            score: .baseball(BaseballScore(home: score.0, away: score.1, inning: 3, half: .top, outs: 1, bases: [false, false, false])))
    }

    /// A provider answering its live list, its schedule and each match from `games`.
    static func provider(_ games: [MatchSnapshot], intervalMs: Int = 1_000) -> ScriptedTransport {
        ScriptedTransport { request in
            let encoder = JSON.encoder()
            let body: Data?
            switch request.resource {
            case "/live-matches":
                body = try? encoder.encode(NativeFeedBody.LiveMatches(retryAfterMs: intervalMs, generatedAt: noon, matches: games))
            case "/schedule":
                body = try? encoder.encode(NativeFeedBody.Schedule(date: request.queryValue("date") ?? "", matches: games))
            default:
                let id = String(request.resource.dropFirst("/matches/".count)).removingPercentEncoding ?? ""
                guard let game = games.first(where: { $0.id == id }) else { return .response(FeedResponse(status: 404)) }
                body = try? encoder.encode(NativeFeedBody.Match(retryAfterMs: intervalMs, match: game))
            }
            return .response(FeedResponse(status: 200, headers: ["content-type": "application/json"], body: body))
        }
    }

    static func ids(_ response: FeedResponse) throws -> [String] {
        try FeedDecoding.liveMatches(try #require(response.body)).matches.map(\.id)
    }

    @Test("the same game from two providers is one game; a doubleheader's two games are two")
    func canonicalIdentity() async throws {
        let later = Self.noon.addingTimeInterval(5 * 3600)
        let official = Self.provider([
            Self.snapshot("mlb:1", "New York Yankees", "Boston Red Sox", at: Self.noon),
            Self.snapshot("mlb:2", "New York Yankees", "Boston Red Sox", at: later),
            Self.snapshot("mlb:3", "Atlético Madrid", "Real Betis", at: Self.noon),
        ])
        // Another provider: its own ids and spellings, start times a few minutes off, one alias.
        let unofficial = Self.provider([
            Self.snapshot("espn:20", "NY Yankees", "Boston Red Sox", at: later.addingTimeInterval(240)),
            Self.snapshot("espn:10", "NY Yankees", "Boston Red Sox", at: Self.noon.addingTimeInterval(-300)),
            Self.snapshot("espn:30", "Atletico Madrid FC", "Real Betis", at: Self.noon),
        ])
        let settings = FailoverSettings(identity: GameIdentity(aliases: ["NY Yankees": "New York Yankees"]))
        let group = ProviderGroup(
            providers: [
                .init(name: "official", tier: .official, transport: official),
                .init(name: "unofficial", tier: .unofficial, transport: unofficial),
            ], settings: settings)
        let ids = try Self.ids(try await group.fetch(.liveMatches))
        let first = "game:baseball:2026-04-21:new-york-yankees-v-boston-red-sox"
        #expect(Set(ids) == [first, first + ":2", "game:baseball:2026-04-21:atletico-madrid-v-real-betis"])

        // The best provider serves each game; the other is not asked.
        let answer = try #require(try await group.fetch(.match(first + ":2")).body)
        #expect(try FeedDecoding.match(answer).match.id == first + ":2")
        #expect(group.provider(serving: first + ":2") == "official")
        let asked = unofficial.requests.map(\.path)
        #expect(!asked.contains("/matches/espn%3A20"), "the official provider answered: \(asked)")
    }

    @Test("a game followed ahead of time is found in the providers' schedules of its day")
    func foundInSchedule() async throws {
        let provider = Self.provider([Self.snapshot("mlb:1", "New York Yankees", "Boston Red Sox", at: Self.noon)])
        let group = ProviderGroup(providers: [.init(name: "mlb", tier: .official, transport: provider)])
        let id = "game:baseball:2026-04-21:new-york-yankees-v-boston-red-sox"
        let response = try await group.fetch(.match(id))
        #expect(response.status == 200)
        #expect(provider.requests.map(\.path).contains("/schedule?date=2026-04-21"))
        let unknown = try await group.fetch(.match("game:baseball:2026-04-21:nobody-v-noone"))
        #expect(unknown.status == 404)
    }

    @Test("a provider with 10 requests a minute is never asked more, even with 50 games; another serves the rest")
    func budget() async throws {
        let games = (1...50).map { Self.snapshot("cheap:\($0)", "Home \($0)", "Away \($0)", at: Self.noon) }
        let cheap = Self.provider(games)
        let group = ProviderGroup(providers: [
            .init(name: "cheap", tier: .official, transport: cheap, budget: RequestBudget(requests: 10, per: .seconds(60)))
        ])
        let ids = try Self.ids(try await group.fetch(.liveMatches))
        #expect(ids.count == 50)
        var answered = 0
        var limited = 0
        for _ in 0..<3 {
            for id in ids {
                let response = try await group.fetch(.match(id))
                if response.status == 200 { answered += 1 }
                if response.status == 429 {
                    limited += 1
                    #expect(Int(response.headers["retry-after"] ?? "") ?? 0 > 0)
                }
            }
        }
        #expect(cheap.requests.count == 10, "\(cheap.requests.count) requests")
        // The list took one; nine games were answered once and then from what was served, with the wait to come.
        #expect(answered == 9 * 3)
        #expect(limited == 41 * 3)

        // With a second provider the games the budget cannot pay for are served by it.
        let cheap2 = Self.provider(games)
        let spare = Self.provider(games.map { var game = $0; game.id = "spare:" + $0.id; return game })
        let both = ProviderGroup(providers: [
            .init(name: "cheap", tier: .official, transport: cheap2, budget: RequestBudget(requests: 10, per: .seconds(60))),
            .init(name: "spare", tier: .unofficial, transport: spare),
        ])
        let merged = try Self.ids(try await both.fetch(.liveMatches))
        #expect(merged.count == 50)
        for id in merged { #expect(try await both.fetch(.match(id)).status == 200) }
        #expect(cheap2.requests.count <= 10)
    }

    @Test("a provider serves only its competitions; a provider that stops knowing a game (404) leaves it to the others")
    func competitionsAndNotFound() async throws {
        var cup = Self.snapshot("a:2", "Cubs", "Mets", at: Self.noon)
        cup.competition = "Exhibition"
        let first = Self.provider([Self.snapshot("a:1", "Yankees", "Red Sox", at: Self.noon), cup])
        let second = Self.provider([Self.snapshot("b:1", "Yankees", "Red Sox", at: Self.noon)])
        let group = ProviderGroup(providers: [
            .init(name: "first", tier: .official, transport: first, competitions: ["mlb"]),
            .init(name: "second", tier: .unofficial, transport: second),
        ])
        let ids = try Self.ids(try await group.fetch(.liveMatches))
        #expect(ids == ["game:baseball:2026-04-21:yankees-v-red-sox"], "the exhibition game is not the first provider's to serve")

        // The first provider forgets the game: the second answers, and the first is not counted as failing.
        let forgetful = ProviderGroup(providers: [
            .init(name: "first", tier: .official, transport: ScriptedTransport { request in
                if request.resource.hasPrefix("/matches/") { return .response(FeedResponse(status: 404)) }
                let body = try? JSON.encoder().encode(NativeFeedBody.LiveMatches(
                    retryAfterMs: 1_000, generatedAt: Self.noon, matches: [Self.snapshot("a:1", "Yankees", "Red Sox", at: Self.noon)]))
                return .response(FeedResponse(status: 200, body: body))
            }),
            .init(name: "second", tier: .unofficial, transport: second),
        ])
        _ = try await forgetful.fetch(.liveMatches)
        #expect(try await forgetful.fetch(.match(ids[0])).status == 200)
        #expect(forgetful.provider(serving: ids[0]) == "second")
        #expect(forgetful.status.map(\.consecutiveFailures) == [0, 0])
    }

    @Test("a provider whose list stops answering drops its games from the merged list after two of its intervals")
    func deadProvidersGamesLeaveTheList() async throws {
        let down = Mutex(false)
        let games = [Self.snapshot("a:1", "Yankees", "Red Sox", at: Self.noon)]
        let flaky = ScriptedTransport { _ in
            guard !down.withLock({ $0 }) else { return .response(FeedResponse(status: 500)) }
            let body = try? JSON.encoder().encode(NativeFeedBody.LiveMatches(retryAfterMs: 500, generatedAt: Self.noon, matches: games))
            return .response(FeedResponse(status: 200, body: body))
        }
        let group = ProviderGroup(providers: [.init(name: "flaky", tier: .official, transport: flaky)])
        #expect(try Self.ids(try await group.fetch(.liveMatches)).count == 1)
        down.withLock { $0 = true }
        // Only a lower bound on the time passed is checked: under load more passes, never less.
        try await Task.sleep(for: .milliseconds(1_150))
        #expect(try await group.fetch(.liveMatches).status == 502)
    }

    @Test("a served answer is 304 to a poller holding it, and carries the interval the budget allows")
    func conditionalAnswers() async throws {
        let games = (1...4).map { Self.snapshot("m:\($0)", "Home \($0)", "Away \($0)", at: Self.noon) }
        let group = ProviderGroup(providers: [
            .init(name: "slow", tier: .official, transport: Self.provider(games, intervalMs: 1_000),
                  budget: RequestBudget(requests: 60, per: .seconds(60)))
        ])
        let ids = try Self.ids(try await group.fetch(.liveMatches))
        for id in ids { _ = try await group.fetch(.match(id)) }
        let first = try await group.fetch(.match(ids[0]))
        let etag = try #require(first.headers["etag"])
        // 60 a minute over four games: each at most every 4 s.
        #expect(try FeedDecoding.match(try #require(first.body)).retryAfterMs == 4_000)
        let again = try await group.fetch(FeedRequest(path: FeedRequest.match(ids[0]).path, headers: ["if-none-match": etag]))
        #expect(again.status == 304)
        #expect(again.headers["retry-after"] == "4")
    }
}

@Suite("Game identity and progress")
struct GameIdentityTests {
    @Test("names: case, accents, FC/AFC, punctuation and aliases")
    func names() {
        let identity = GameIdentity(aliases: ["Man Utd": "Manchester United"])
        #expect(identity.slug("Atlético Madrid") == "atletico-madrid")
        #expect(identity.slug("Arsenal FC") == identity.slug("arsenal"))
        #expect(identity.slug("Brighton & Hove Albion") == "brighton-and-hove-albion")
        #expect(identity.slug("Man. Utd") == "manchester-united")
        #expect(identity.slug("FC") == "fc")
    }

    @Test("the day is the game's day in the group's time zone")
    func day() throws {
        // 2026-04-22T00:10Z is an evening game on the 21st in New York.
        let start = Date(timeIntervalSince1970: 1_776_816_600)
        #expect(GameIdentity().day(of: start) == "2026-04-22")
        #expect(GameIdentity(timeZone: try #require(TimeZone(identifier: "America/New_York"))).day(of: start) == "2026-04-21")
        #expect(GameIdentity.day(inId: "game:hockey:2026-04-21:a-v-b:2") == "2026-04-21")
        #expect(GameIdentity.day(inId: "espn:401547417") == nil)
    }

    static func football(_ home: Int, _ away: Int, period: String?, clock: String?, status: MatchStatus = .live) -> MatchSnapshot {
        MatchSnapshot(
            id: "x", sport: .football, status: status, home: Team(id: "h", name: "H"), away: Team(id: "a", name: "A"),
            score: .teamTotals(TeamScore(home: home, away: away, period: period, clock: clock)))
    }

    @Test("behind: a lower score, an earlier stage, period or clock; level within the clock's tolerance")
    func progress() {
        let shown = Self.football(1, 0, period: "2H", clock: "67'")
        #expect(ProviderGroup.sameProgress(shown, shown))
        #expect(!ProviderGroup.sameProgress(Self.football(0, 0, period: "2H", clock: "70'"), shown))
        #expect(!ProviderGroup.sameProgress(Self.football(1, 0, period: "1H", clock: "44'"), shown))
        #expect(!ProviderGroup.sameProgress(Self.football(1, 0, period: "2H", clock: "60'"), shown))
        #expect(ProviderGroup.sameProgress(Self.football(1, 0, period: "2H", clock: "67'"), Self.football(1, 0, period: "2H", clock: "67'")))
        #expect(!ProviderGroup.sameProgress(Self.football(1, 0, period: "HT", clock: nil, status: .break), shown))
        #expect(!ProviderGroup.sameProgress(Self.football(1, 0, period: nil, clock: nil, status: .scheduled), shown))
        // Countdown clocks: more time left is earlier.
        let hockey = { (clock: String, period: String) in
            MatchSnapshot(
                id: "x", sport: .hockey, status: .live, home: Team(id: "h", name: "H"), away: Team(id: "a", name: "A"),
                score: .teamTotals(TeamScore(home: 2, away: 2, period: period, clock: clock)))
        }
        #expect(!ProviderGroup.sameProgress(hockey("15:00", "P2"), hockey("05:00", "P2")))
        #expect(ProviderGroup.sameProgress(hockey("05:20", "P2"), hockey("05:00", "P2")))
        #expect(!ProviderGroup.sameProgress(hockey("05:00", "P2"), hockey("19:00", "OT")))
    }

    @Test("a budget allows at most N in any window")
    func budgetWindow() {
        let budget = RequestBudget(requests: 3, per: .seconds(60))
        let start = ContinuousClock.now
        for second in [0, 10, 20] { #expect(budget.take(now: start.advanced(by: .seconds(second))) == nil) }
        #expect(budget.take(now: start.advanced(by: .seconds(59))) == .seconds(1))
        #expect(budget.take(now: start.advanced(by: .seconds(60))) == nil)
        #expect(budget.take(now: start.advanced(by: .seconds(65))) == .seconds(5))
        #expect(budget.spacing(sharers: 4) == .seconds(80))
    }

    @Test("provider entries: options, and clear errors")
    func entries() throws {
        let entry = try ProviderEntry(parsing: "espn:hockey/nhl;tier=official;budget=10/min;competitions=NHL|Stanley Cup")
        #expect(entry.tier == .official)
        #expect(entry.budget == "10/min")
        #expect(entry.competitions == ["NHL", "Stanley Cup"])
        #expect(try ProviderEntry(parsing: "nhl").tier == .unofficial)
        #expect(throws: FeedError.self) { try ProviderEntry(parsing: "nhl;tier=gold") }
        #expect(throws: FeedError.self) { try ProviderEntry(parsing: "nhl;budget=lots") }
        #expect(throws: FeedError.self) { try ProviderEntry(parsing: "nhl;colour=red") }
        // A base URL for any provider (a proxy, a cache, a test server), as @BASE says it.
        #expect(try ProviderEntry(parsing: "espn:football/nfl;baseURL=http://localhost:8080").spec
            == (try FeedSpec(parsing: "espn:football/nfl@http://localhost:8080")))
        #expect(try ProviderEntry(parsing: "mlb;baseURL=http://127.0.0.1:9").spec == .mlb(baseURL: "http://127.0.0.1:9"))
        #expect(throws: FeedError.self) { try ProviderEntry(parsing: "nhl;baseURL=ftp://x") }
        #expect(throws: FeedError.self) { try ProviderEntry(parsing: "fake;baseURL=http://localhost:1") }
        #expect(throws: FeedError.self) { try ProviderEntry.list(parsing: "nhl,nhl;tier=official") }
    }
}
