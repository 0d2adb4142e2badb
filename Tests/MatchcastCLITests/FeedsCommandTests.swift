import Foundation
import MatchcastTesting
import Testing

/// `matchcast feeds search` and `matchcast feeds status`, run as a user runs them.
@Suite("matchcast feeds: search and status")
struct FeedsCommandTests {
    /// The day of the fake feed's matches (`FakeFeed.epoch`).
    static let fakeDay = "2026-04-21"

    @Test("search finds the fake feed's matches by team or competition, in text or JSON; nothing found exits 1")
    func search() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        // Today the fake feed lists nothing yet (its matches start two simulated minutes in, on its own day).
        let today = try await MatchcastProcess.run(binary, ["feeds", "search", "chelsea", "--feed", "fake"])
        #expect(today.status == 1 && today.stdout.isEmpty)
        let found = try await MatchcastProcess.run(binary, ["feeds", "search", "chelsea", "--feed", "fake", "--date", Self.fakeDay])
        #expect(found.status == 0, "\(found.stderr)")
        let lines = found.stdout.split(separator: "\n")
        #expect(lines.count == 1 && lines[0].hasPrefix("football  football  ") && lines[0].contains("Arsenal v Chelsea")
            && lines[0].contains("Premier League") && lines[0].hasSuffix("fake"), "\(found.stdout)")

        let json = try await MatchcastProcess.run(binary, ["feeds", "search", "ipl", "--json", "--date", Self.fakeDay], environment: ["MATCHCAST_FEED": "fake?speed=60"])
        #expect(json.status == 0, "\(json.stderr)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
        #expect(object["id"] as? String == "cricket-t20" && object["home"] as? String == "Mumbai Indians" && object["feed"] as? String == "fake")

        let none = try await MatchcastProcess.run(binary, ["feeds", "search", "real", "madrid", "--feed", "fake", "--date", Self.fakeDay])
        #expect(none.status == 1 && none.stdout.isEmpty && none.stderr.contains("no match for 'real madrid'"))
        let bad = try await MatchcastProcess.run(binary, ["feeds", "search", "x", "--feed", "fake", "--date", "2026-13-01"])
        #expect(bad.status == 64 && bad.stderr.contains("2026-13-01"), "a usage error")
    }

    @Test("status answers for each feed; a feed that cannot be reached is named and exits 1")
    func status() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let ok = try await MatchcastProcess.run(binary, ["feeds", "status", "--feed", "fake"])
        #expect(ok.status == 0, "\(ok.stderr)")
        #expect(ok.stdout.hasPrefix("fake  ok  ") && ok.stdout.contains(" live") && ok.stdout.contains("poll every"), "\(ok.stdout)")

        let port = try MatchcastProcess.freePort()
        let down = try await MatchcastProcess.run(
            binary, ["feeds", "status", "--feed", "fake", "--feed", "http://user:secret@127.0.0.1:\(port)", "--timeout", "1"])
        #expect(down.status == 1)
        let lines = down.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2 && lines[0].hasPrefix("fake  ok") && lines[1].hasPrefix("http://127.0.0.1:\(port)  failed"), "\(down.stdout)")
        #expect(!down.stdout.contains("secret"), "a feed's credentials never printed")
    }

    @Test("with a provider group: status names each provider with its tier and budget; search lists canonical ids")
    func providers() async throws {
        let binary = try #require(MatchcastProcess.binary, "the matchcast executable is not built beside the tests")
        let kickoff = Date(timeIntervalSince1970: 1_776_780_000)  // 2026-04-21T14:00Z
        let provider = try await FakeProvider.start(
            games: [.init(id: "p-1", home: "Arsenal FC", away: "Chelsea FC", startsAt: kickoff)], intervalMs: 5_000)
        let port = try MatchcastProcess.freePort()
        let dead = "http://127.0.0.1:\(port)"
        let status = try await MatchcastProcess.run(binary, [
            "feeds", "status", "--provider", "\(provider.baseURL);tier=official", "--provider", "\(dead);budget=10/min",
            "--timeout", "1",
        ])
        let lines = status.stdout.split(separator: "\n").map(String.init)
        #expect(status.status == 1)
        #expect(lines.count == 2 && lines[0].hasPrefix("\(provider.baseURL) [official]  ok")
            && lines[1].hasPrefix("\(dead) [unofficial, budget 10/min]  failed"), "\(status.stdout)\(status.stderr)")

        let search = try await MatchcastProcess.run(binary, [
            "feeds", "search", "arsenal", "--provider", provider.baseURL, "--date", Self.fakeDay,
        ])
        #expect(search.status == 0, "\(search.stderr)")
        #expect(search.stdout.hasPrefix("game:football:2026-04-21:arsenal-v-chelsea  football  live"), "\(search.stdout)")
        let bad = try await MatchcastProcess.run(binary, ["feeds", "status", "--provider", "nhl;tier=gold"])
        #expect(bad.status == 64 && bad.stderr.contains("tier 'gold'"), "\(bad.stderr)")
        await provider.stop()
    }
}
