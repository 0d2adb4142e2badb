import AsyncHTTPClient
import Foundation
import MatchcastCore
import MatchcastFeeds
import MatchcastTesting
import Testing

/// Two providers of one game on loopback ports, an official one and an unofficial one, polled through a
/// `ProviderGroup` the way the poller polls a match.
@Suite("Provider failover between two real HTTP providers")
struct ProviderFailoverTests {
    /// 2026-04-21T14:00:00Z.
    static let kickoff = Date(timeIntervalSince1970: 1_776_780_000)
    static let gameId = "game:football:2026-04-21:arsenal-v-chelsea"
    /// What each provider asks to be polled at, and what the test polls at.
    static let intervalMs = 200

    struct Served {
        var home: Int
        var away: Int
        var seq: Int
        var provider: String?
    }

    static func group(_ primary: FakeProvider, _ secondary: FakeProvider, settings: FailoverSettings) throws -> ProviderGroup {
        func provider(_ fake: FakeProvider, _ name: String, _ tier: ProviderTier) throws -> ProviderGroup.Provider {
            let transport = try HTTPFeedTransport(client: HTTPClient.shared, baseURL: fake.baseURL, timeout: .seconds(10))
            return ProviderGroup.Provider(name: name, tier: tier, transport: transport)
        }
        // Given worst first: the tier, not the order, makes the official one primary.
        return ProviderGroup(
            providers: [try provider(secondary, "secondary", .unofficial), try provider(primary, "primary", .official)],
            settings: settings)
    }

    /// One poll of the game, as the poller would send it without validators.
    static func poll(_ group: ProviderGroup) async throws -> Served? {
        let response = try await group.fetch(.match(gameId))
        guard response.status == 200, let body = response.body else { return nil }
        let match = try FeedDecoding.match(body).match
        guard case .teamTotals(let score) = match.score else { return nil }
        #expect(match.id == gameId)
        return Served(home: score.home, away: score.away, seq: match.seq ?? -1, provider: group.provider(serving: gameId))
    }

    static func pause() async throws { try await Task.sleep(for: .milliseconds(intervalMs)) }

    @Test(
        "the secondary takes over within two polls, no poll shows an older score, the primary takes back after its cool-down without a flap",
        arguments: [FakeProvider.Mode.failing, .hanging, .backwards, .frozen])
    func failover(mode: FakeProvider.Mode) async throws {
        let primary = try await FakeProvider.start(
            games: [.init(id: "p-1", home: "Arsenal FC", away: "Chelsea FC", startsAt: Self.kickoff)], intervalMs: Self.intervalMs)
        let secondary = try await FakeProvider.start(
            games: [.init(id: "s-77", home: "Arsenal", away: "Chelsea", startsAt: Self.kickoff.addingTimeInterval(120))],
            intervalMs: Self.intervalMs)
        defer { Task { await primary.stop(); await secondary.stop() } }
        // Only a frozen provider needs the check against the next one; elsewhere it would ask the secondary too.
        let staleAfter: Duration? = mode == .frozen ? .milliseconds(600) : nil
        let settings = FailoverSettings(
            failuresBeforeDisable: 3, coolDown: .milliseconds(1_500), staleAfter: staleAfter, attemptTimeout: .seconds(2))
        let group = try Self.group(primary, secondary, settings: settings)

        // Both list the game; it is one game under one canonical id.
        let list = try FeedDecoding.liveMatches(try #require(try await group.fetch(.liveMatches).body))
        #expect(list.matches.map(\.id) == [Self.gameId])

        var served: [Served] = []
        func poll() async throws -> Served {
            let answer = try #require(try await Self.poll(group), "every poll is answered")
            served.append(answer)
            return answer
        }
        #expect(try await poll().provider == "primary")

        // A goal; the primary shows it, then starts failing.
        primary.score("p-1", home: 1, away: 0)
        secondary.score("s-77", home: 1, away: 0)
        try await Self.pause()
        #expect(try await poll().home == 1)
        primary.set(mode)
        try await Self.pause()
        // A second goal only a working provider shows.
        primary.score("p-1", home: 2, away: 0)
        secondary.score("s-77", home: 2, away: 0)
        var polls = 0
        while try await poll().home != 2 {
            polls += 1
            #expect(polls < 20, "the secondary never took over")
            if polls >= 20 { break }
            try await Self.pause()
        }
        if mode == .frozen {
            // A frozen provider still answers: it is found out once it shows no change for `staleAfter`.
            #expect(polls <= 2 + 600 / Self.intervalMs, "took \(polls) polls")
        } else {
            #expect(polls <= 1, "took \(polls + 1) polls")
        }
        #expect(served.last?.provider == "secondary")

        // The primary recovers; after its cool-down it takes its game back, and keeps it.
        primary.set(.ok)
        var back = 0
        while try await poll().provider != "primary" {
            back += 1
            #expect(back < 40, "the primary never took its game back")
            if back >= 40 { break }
            try await Self.pause()
        }
        let secondaryAsked = secondary.matchRequests
        for _ in 0..<8 {
            try await Self.pause()
            #expect(try await poll().provider == "primary")
        }
        if staleAfter == nil {
            #expect(secondary.matchRequests == secondaryAsked, "the secondary was asked again: a flap")
        } else {
            // Asked only to check that the primary is not frozen again, at most once per `staleAfter`.
            #expect(secondary.matchRequests - secondaryAsked <= 4)
        }

        // Never an older score than one already shown, and seq only grows.
        for (earlier, later) in zip(served, served.dropFirst()) {
            #expect(later.home >= earlier.home && later.away >= earlier.away, "\(served.map { "\($0.home)-\($0.away)" })")
            #expect(later.seq >= earlier.seq)
        }
        let status = group.status
        #expect(status.map(\.name) == ["primary", "secondary"])
        #expect(status.map(\.state) == ["healthy", "healthy"])
    }

    @Test("with every provider failing the poll fails, naming each; a provider alone may correct its own score")
    func allFailingAndCorrections() async throws {
        let primary = try await FakeProvider.start(
            games: [.init(id: "p-1", home: "Arsenal", away: "Chelsea", startsAt: Self.kickoff)], intervalMs: Self.intervalMs)
        let secondary = try await FakeProvider.start(
            games: [.init(id: "s-77", home: "Arsenal", away: "Chelsea", startsAt: Self.kickoff)], intervalMs: Self.intervalMs)
        defer { Task { await primary.stop(); await secondary.stop() } }
        let group = try Self.group(primary, secondary, settings: FailoverSettings(coolDown: .seconds(60), staleAfter: nil))
        _ = try await group.fetch(.liveMatches)
        primary.score("p-1", home: 1, away: 0)
        secondary.score("s-77", home: 1, away: 0)
        #expect(try await Self.poll(group)?.home == 1)

        // The goal is ruled out: both providers take it back, and so does the game.
        primary.score("p-1", home: 0, away: 0)
        secondary.score("s-77", home: 0, away: 0)
        let corrected = try #require(try await Self.poll(group))
        #expect(corrected.home == 0)
        #expect(corrected.provider == "primary")

        primary.set(.failing)
        secondary.set(.failing)
        let response = try await group.fetch(.match(Self.gameId))
        #expect(response.status == 502)
        let message = String(decoding: response.body ?? Data(), as: UTF8.self)
        #expect(message.contains("primary: HTTP 500") && message.contains("secondary: HTTP 500"), "\(message)")
    }
}
