import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// The NHL payloads under `$MATCHCAST_REALDATA/nhl/` (read in place, never copied), converted and
/// checked against what each file says. Expected values come from the raw JSON through
/// `JSONSerialization`, never from the converters. Skipped, visibly, when the variable is unset.
@Suite("Real-data conformance: NHL")
struct NHLConformanceTests {
    static let playByPlayPrefix = "apiweb_playbyplay_"
    static let statsAPIPrefix = "statsapi_feedlive_"

    /// The files this suite reads: `nhl/apiweb_playbyplay_*.json` and `nhl/statsapi_feedlive_*.json`.
    static var files: [URL] {
        ConformanceTests.files("nhl", "json").filter { covers("nhl/" + $0.lastPathComponent) }
    }

    /// Whether `path` (relative to the data root) is one of the files this suite reads.
    static func covers(_ path: String) -> Bool {
        guard path.hasPrefix("nhl/"), path.hasSuffix(".json") else { return false }
        let name = path.dropFirst(4)
        return !name.contains("/") && (name.hasPrefix(playByPlayPrefix) || name.hasPrefix(statsAPIPrefix))
    }

    /// The label a period number and type read as: `P1`...`P3`, `OT`, `2OT`..., `SO`.
    private static func expectedPeriod(number: Int, type: String) -> String {
        switch type {
        case "SO": return "SO"
        case "OT": return number - 3 <= 1 ? "OT" : "\(number - 3)OT"
        default: return "P\(number)"
        }
    }

    private static func object(_ url: URL) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any], "\(url.lastPathComponent)")
    }

    @Test("every NHL file is read by this suite", .enabled(if: ConformanceTests.hasData, "set MATCHCAST_REALDATA to the real-data directory"))
    func filesArePresent() {
        #expect(Self.files.contains { $0.lastPathComponent.hasPrefix(Self.playByPlayPrefix) })
        #expect(Self.files.contains { $0.lastPathComponent.hasPrefix(Self.statsAPIPrefix) })
    }

    @Test("every api-web play-by-play converts and ends as the file says", .enabled(if: ConformanceTests.hasData, "set MATCHCAST_REALDATA to the real-data directory"))
    func apiWebPlayByPlay() throws {
        let files = Self.files.filter { $0.lastPathComponent.hasPrefix(Self.playByPlayPrefix) }
        #expect(!files.isEmpty)
        for url in files {
            let name = url.lastPathComponent
            let json = try Self.object(url)
            let id = try #require(json["id"] as? Int)
            let homeTeam = try #require(json["homeTeam"] as? [String: Any])
            let awayTeam = try #require(json["awayTeam"] as? [String: Any])
            let (home, away) = (try #require(homeTeam["score"] as? Int), try #require(awayTeam["score"] as? Int))
            let (homeShort, awayShort) = (try #require(homeTeam["abbrev"] as? String), try #require(awayTeam["abbrev"] as? String))
            let state = try #require(json["gameState"] as? String)
            let clock = json["clock"] as? [String: Any]
            let expectedStatus: MatchStatus = switch state {
            case "FINAL", "OFF": .completed
            case "LIVE", "CRIT": (clock?["inIntermission"] as? Bool) == true ? .break : .live
            default: .scheduled
            }
            let descriptor = try #require(json["periodDescriptor"] as? [String: Any])
            let period = Self.expectedPeriod(
                number: try #require(descriptor["number"] as? Int), type: try #require(descriptor["periodType"] as? String))
            let plays = try #require(json["plays"] as? [[String: Any]])
            let goals = plays.filter { $0["typeDescKey"] as? String == "goal" }
                .sorted { (($0["sortOrder"] as? Int) ?? 0) < (($1["sortOrder"] as? Int) ?? 0) }
            let inShootout = { (play: [String: Any]) in ((play["periodDescriptor"] as? [String: Any])?["periodType"] as? String) == "SO" }
            let scored = goals.filter { !inShootout($0) }

            let snapshot = try NHLWebFeed.snapshot(fromPlayByPlay: Data(contentsOf: url))
            #expect(snapshot.id == "nhl:\(id)", "\(name)")
            #expect(snapshot.sport == .hockey)
            #expect(snapshot.status == expectedStatus, "\(name): gameState \(state)")
            #expect(snapshot.home.short == homeShort && snapshot.away.short == awayShort, "\(name)")
            let expectedClock = expectedStatus == .live ? clock?["timeRemaining"] as? String : nil
            #expect(snapshot.score == .teamTotals(TeamScore(home: home, away: away, period: period, clock: expectedClock)), "\(name)")

            // Goals: one event each (the latest 20), ids from eventId, newest last.
            #expect(snapshot.events.count == min(goals.count, NHLWebFeed.eventLimit), "\(name): \(goals.count) goal plays")
            #expect(snapshot.events.map(\.id) == goals.suffix(NHLWebFeed.eventLimit).map { "goal-\($0["eventId"] as? Int ?? -1)" }, "\(name)")
            #expect(snapshot.events.filter { $0.type == "goal" }.count == min(scored.count, NHLWebFeed.eventLimit), "\(name)")

            // The score after the last goal is the final score (a shootout adds one to the winner).
            let last = try #require(scored.last?["details"] as? [String: Any], "\(name): no goal")
            let (lastHome, lastAway) = (try #require(last["homeScore"] as? Int), try #require(last["awayScore"] as? Int))
            if goals.contains(where: inShootout) {
                #expect(lastHome == lastAway && abs(home - away) == 1 && max(home, away) == lastHome + 1, "\(name)")
            } else {
                #expect(lastHome == home && lastAway == away, "\(name): last goal \(lastHome)-\(lastAway), final \(home)-\(away)")
            }
            let lastEvent = try #require(snapshot.events.last { $0.type == "goal" })
            #expect(lastEvent.text.contains("\(homeShort) \(lastHome)-\(lastAway) \(awayShort)"), "\(name): \(lastEvent.text)")

            try Self.checkRenderingAndTransport(snapshot, home: home, away: away, name: name)
        }
    }

    @Test("every legacy statsapi live feed converts and ends as the file says", .enabled(if: ConformanceTests.hasData, "set MATCHCAST_REALDATA to the real-data directory"))
    func statsAPIFeedLive() throws {
        let files = Self.files.filter { $0.lastPathComponent.hasPrefix(Self.statsAPIPrefix) }
        #expect(!files.isEmpty)
        for url in files {
            let name = url.lastPathComponent
            let json = try Self.object(url)
            let gamePk = try #require(json["gamePk"] as? Int)
            let gameData = try #require(json["gameData"] as? [String: Any])
            let abstract = try #require((gameData["status"] as? [String: Any])?["abstractGameState"] as? String)
            let liveData = try #require(json["liveData"] as? [String: Any])
            let linescore = try #require(liveData["linescore"] as? [String: Any])
            let teams = try #require(linescore["teams"] as? [String: [String: Any]])
            let (home, away) = (try #require(teams["home"]?["goals"] as? Int), try #require(teams["away"]?["goals"] as? Int))
            let intermission = ((linescore["intermissionInfo"] as? [String: Any])?["inIntermission"] as? Bool) == true
            let expectedStatus: MatchStatus = switch abstract {
            case "Final": .completed
            case "Live": intermission ? .break : .live
            default: .scheduled
            }
            // The ordinal says it: "1st".."3rd" are P1..P3, "OT", "2OT", "SO" read as themselves.
            let ordinal = try #require(linescore["currentPeriodOrdinal"] as? String)
            let number = try #require(linescore["currentPeriod"] as? Int)
            let period = ordinal.hasSuffix("OT") || ordinal == "SO" ? ordinal : "P\(number)"
            let plays = try #require(liveData["plays"] as? [String: Any])
            let all = try #require(plays["allPlays"] as? [[String: Any]])
            let scoring = try #require(plays["scoringPlays"] as? [Int])
            let goals = scoring.map { all[$0] }
            #expect(goals.allSatisfy { ($0["result"] as? [String: Any])?["eventTypeId"] as? String == "GOAL" }, "\(name)")

            let (snapshot, wait) = try NHLStatsAPIFeed.snapshot(from: Data(contentsOf: url))
            #expect(wait == (json["metaData"] as? [String: Any])?["wait"] as? Int)
            #expect(snapshot.id == "nhl:\(gamePk)", "\(name)")
            #expect(snapshot.status == expectedStatus, "\(name): \(abstract)")
            let remaining = linescore["currentPeriodTimeRemaining"] as? String
            let expectedClock = expectedStatus == .live && remaining?.contains(":") == true ? remaining : nil
            #expect(snapshot.score == .teamTotals(TeamScore(home: home, away: away, period: period, clock: expectedClock)), "\(name)")

            #expect(snapshot.events.count == min(goals.count, NHLWebFeed.eventLimit), "\(name): \(goals.count) scoring plays")
            #expect(
                snapshot.events.map(\.id)
                    == goals.suffix(NHLWebFeed.eventLimit).map { "goal-\(($0["about"] as? [String: Any])?["eventId"] as? Int ?? -1)" },
                "\(name)")
            let after = try #require((goals.last?["about"] as? [String: Any])?["goals"] as? [String: Int], "\(name): no goal")
            let (lastHome, lastAway) = (try #require(after["home"]), try #require(after["away"]))
            if (linescore["hasShootout"] as? Bool) == true {
                #expect(lastHome == lastAway && abs(home - away) == 1, "\(name)")
            } else {
                #expect(lastHome == home && lastAway == away, "\(name): last goal \(lastHome)-\(lastAway), final \(home)-\(away)")
            }
            let homeShort = try #require(((gameData["teams"] as? [String: Any])?["home"] as? [String: Any])?["abbreviation"] as? String)
            let awayShort = try #require(((gameData["teams"] as? [String: Any])?["away"] as? [String: Any])?["abbreviation"] as? String)
            #expect(snapshot.events.last?.text.contains("\(homeShort) \(lastHome)-\(lastAway) \(awayShort)") == true, "\(name)")

            try Self.checkRenderingAndTransport(snapshot, home: home, away: away, name: name)
        }
    }

    /// The snapshot renders to the file's totals and reads back the same from the native JSON a transport writes.
    private static func checkRenderingAndTransport(_ snapshot: MatchSnapshot, home: Int, away: Int, name: String) throws {
        let rendered = try MatchRenderer.render(snapshot)
        print("\(name): \(rendered.contentState.statusText) \(rendered.contentState.summary) (\(rendered.contentState.result ?? "-")), "
            + "\(snapshot.events.count) goals, last: \(snapshot.events.last?.text ?? "-")")
        guard case .totals(let totals) = rendered.derived else {
            Issue.record("\(name): not team totals")
            return
        }
        #expect(totals.home == home && totals.away == away, "\(name)")
        let native = try JSON.encoder().encode(NativeFeedBody.Match(retryAfterMs: 10_000, match: snapshot))
        #expect(try FeedDecoding.match(native).match == snapshot, "\(name): the native body changes the snapshot")
    }
}
