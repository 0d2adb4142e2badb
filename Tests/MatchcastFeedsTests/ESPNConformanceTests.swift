import Foundation
import MatchcastCore
import Testing

@testable import MatchcastFeeds

/// Every ESPN payload under `$MATCHCAST_REALDATA/espn/` and `football/` (read in place, never
/// copied) converted by `ESPNEventConverter`, and checked against what the file itself says.
/// The expected values are read here from the raw JSON (`JSONSerialization`), mostly from ESPN's
/// own words (`shortDetail` "8:36 - 3rd", "Final/OT", "Top 9th"), never by calling the converter.
@Suite("ESPN real-data conformance")
struct ESPNConformanceTests {
    static let enabled = ConformanceTests.hasData
    static let skipReason: Comment = "set MATCHCAST_REALDATA to the real-data directory"

    /// ESPN's sport ids in `uid` (`s:600~l:606~e:760415`).
    static let sportIds = ["1": "baseball", "20": "football", "40": "basketball", "70": "hockey", "600": "soccer",
                           "400": "volleyball", "2000": "racing", "1100": "golf"]
    /// The data set's file-name tokens (`scoreboard_<token>_…`), for files without a `uid`.
    static let fileTokens = ["soccer": "soccer", "mlb": "baseball", "nhl": "hockey", "ncaaf": "football", "nfl": "football",
                             "nba": "basketball", "wnba": "basketball", "ncaab": "basketball", "ncaavbw": "volleyball",
                             "nascar": "racing", "f1": "racing", "golf": "golf"]

    // MARK: Scoreboards and team schedules

    @Test("every event of every ESPN scoreboard and team schedule converts as its file says", .enabled(if: enabled, skipReason))
    func scoreboardsAndSchedules() throws {
        let files = ConformanceTests.files("espn", "json")
        #expect(!files.isEmpty)
        var table: [String] = []
        var failures: [String] = []
        var converted = 0
        var refused = 0
        for url in files {
            let data = try Data(contentsOf: url)
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(url.lastPathComponent)")
            if json["header"] != nil {
                try checkSummary(url, data: data, json: json)
                continue
            }
            guard let events = json["events"] as? [[String: Any]] else {
                Issue.record("\(url.lastPathComponent): neither a scoreboard, a team schedule nor a summary")
                continue
            }
            let league = try Self.league(of: json, file: url.lastPathComponent)
            let results = try ESPNEventConverter.events(fromScoreboard: data, league: league)
            #expect(results.count == events.count, "\(url.lastPathComponent): one result per event")
            for (event, result) in zip(events, results) {
                let eventId = event["id"] as? String ?? "?"
                let label = "\(url.lastPathComponent) \(eventId)"
                #expect(result.eventId == eventId, "\(label)")
                guard let expectedSport = Self.matchcastSport(league.sport) else {
                    // No model for this sport: each event is refused, naming the sport and league.
                    refused += 1
                    switch result.result {
                    case .success: failures.append("\(label): \(league) converted, expected a refusal")
                    case .failure(let error):
                        if !error.description.contains("\(league)") || !error.description.contains("not a sport Matchcast models") {
                            failures.append("\(label): refusal does not name \(league): \(error)")
                        }
                    }
                    continue
                }
                let snapshot: MatchSnapshot
                switch result.result {
                case .failure(let error):
                    failures.append("\(label): \(error)")
                    continue
                case .success(let value):
                    snapshot = value
                }
                converted += 1
                let expected = try Self.expectation(event, sport: league.sport)
                let got = Self.facts(snapshot)
                if snapshot.sport != expectedSport { failures.append("\(label): sport \(snapshot.sport)") }
                if got != expected { failures.append("\(label): expected \(expected), got \(got)") }
                table.append("\(label.padding(toLength: 60, withPad: " ", startingAt: 0)) \(got)")
            }
        }
        print(table.joined(separator: "\n"))
        print("ESPN conformance: \(converted) events converted, \(refused) refused as unsupported sports")
        #expect(converted > 0)
        #expect(failures.isEmpty, "\(failures.count) ESPN events differ:\n\(failures.joined(separator: "\n"))")
    }

    // MARK: Summaries

    @Test("every ESPN summary converts; its goals are key events adding up to its final score", .enabled(if: enabled, skipReason))
    func summaries() throws {
        let files = ConformanceTests.files("football", "json")
        #expect(!files.isEmpty)
        for url in files {
            let data = try Data(contentsOf: url)
            let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any], "\(url.lastPathComponent)")
            guard json["header"] != nil else {
                Issue.record("\(url.lastPathComponent): not an ESPN summary (no header)")
                continue
            }
            try checkSummary(url, data: data, json: json)
        }
    }

    private func checkSummary(_ url: URL, data: Data, json: [String: Any]) throws {
        let name = url.lastPathComponent
        let header = try #require(json["header"] as? [String: Any], "\(name): header")
        let league = try Self.league(of: json, file: name)
        let competition = try #require((header["competitions"] as? [[String: Any]])?.first, "\(name): competition")
        let competitors = try #require(competition["competitors"] as? [[String: Any]])
        let status = try #require(competition["status"] as? [String: Any])
        let state = try #require((status["type"] as? [String: Any])?["state"] as? String)
        var totals: [String: Int] = [:]
        var teamIds: [String: String] = [:]
        for competitor in competitors {
            let side = try #require(competitor["homeAway"] as? String)
            let score = try #require(Self.count(competitor["score"]), "\(name): \(side) score")
            totals[side] = score
            teamIds[side] = try #require((competitor["team"] as? [String: Any])?["id"] as? String)
        }
        let snapshot = try ESPNEventConverter.snapshot(fromSummary: data, league: league)
        #expect(snapshot.id == "espn:\(header["id"] as? String ?? "?")", "\(name)")
        #expect(snapshot.home.id == teamIds["home"] && snapshot.away.id == teamIds["away"], "\(name)")
        guard case .teamTotals(let score) = snapshot.score else {
            Issue.record("\(name): not a two-total score")
            return
        }
        #expect(score.home == totals["home"] && score.away == totals["away"], "\(name): \(score) vs \(totals)")
        if state == "post" { #expect(snapshot.status.isFinal || snapshot.status == .postponed, "\(name): \(snapshot.status)") }

        // Goals in keyEvents (scoring plays not in a shootout), per team, from the raw JSON.
        let keyEvents = json["keyEvents"] as? [[String: Any]] ?? []
        var rawGoals: [String: Int] = [:]
        for play in keyEvents where play["scoringPlay"] as? Bool == true && play["shootout"] as? Bool != true {
            let team = (play["team"] as? [String: Any])?["id"] as? String ?? "?"
            rawGoals[team, default: 0] += 1
        }
        let goals = snapshot.events.filter { $0.type == "goal" || $0.type == "ownGoal" }
        #expect(goals.count == rawGoals.values.reduce(0, +), "\(name): goal events")
        #expect(goals.count == score.home + score.away, "\(name): goals \(goals.map(\.text)) vs final \(score.home)-\(score.away)")
        for side in ["home", "away"] {
            let team = teamIds[side] ?? "?"
            let credited = goals.filter { $0.type == "goal" && $0.id.hasPrefix("goal-\(team)-") }.count
            let own = goals.filter { $0.type == "ownGoal" && !$0.id.hasPrefix("ownGoal-\(team)-") }.count
            #expect(credited + own == totals[side], "\(name): \(side) goals")
        }
        #expect(Set(snapshot.events.map(\.id)).count == snapshot.events.count, "\(name): event ids are unique")
        for goal in goals {
            // The match clock is in the text ("67' GOAL MEX · Raúl Jiménez").
            #expect(goal.text.range(of: #"^\d+'(\+\d+')? "#, options: .regularExpression) != nil, "\(name): \(goal.text)")
            #expect(goal.at != nil, "\(name): \(goal.id) has its wall clock")
        }

        // Where a scoreboard holds the same event, its details give the same event ids: a match
        // keeps its events whether the summary answered or not.
        let eventId = header["id"] as? String ?? "?"
        for url in ConformanceTests.files("espn", "json") where url.lastPathComponent.hasPrefix("scoreboard_") {
            let board = try Data(contentsOf: url)
            let boardJSON = try #require(try JSONSerialization.jsonObject(with: board) as? [String: Any])
            let boardLeague = try Self.league(of: boardJSON, file: url.lastPathComponent)
            guard boardLeague.sport == league.sport,
                let match = try ESPNEventConverter.events(fromScoreboard: board, league: boardLeague)
                    .first(where: { $0.eventId == eventId })?.snapshot
            else { continue }
            #expect(match.events.map(\.id) == snapshot.events.map(\.id), "\(name) v \(url.lastPathComponent)")
            guard case .teamTotals(let boardScore) = match.score else { continue }
            #expect(boardScore.home == score.home && boardScore.away == score.away)
        }
    }

    // MARK: One bad event

    @Test("a broken event in a real scoreboard fails alone, naming its field", .enabled(if: enabled, skipReason))
    func oneBadEventFailsAlone() throws {
        let url = try #require(ConformanceTests.files("espn", "json").first { $0.lastPathComponent.contains("mlb") })
        var json = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
        var events = try #require(json["events"] as? [[String: Any]])
        try #require(events.count > 3)
        var competitions = try #require(events[2]["competitions"] as? [[String: Any]])
        competitions[0]["competitors"] = nil
        events[2]["competitions"] = competitions
        var status = try #require(events[3]["status"] as? [String: Any])
        var kind = try #require(status["type"] as? [String: Any])
        kind["state"] = "sideways"
        status["type"] = kind
        events[3]["status"] = status
        // Event 3 carries its status twice; break the one the converter reads first too.
        var competitions3 = try #require(events[3]["competitions"] as? [[String: Any]])
        competitions3[0]["status"] = status
        events[3]["competitions"] = competitions3
        json["events"] = events
        let data = try JSONSerialization.data(withJSONObject: json)

        let results = try ESPNEventConverter.events(fromScoreboard: data, league: ESPNLeague(sport: "baseball", league: "mlb"))
        #expect(results.count == events.count)
        for (index, result) in results.enumerated() {
            switch (index, result.result) {
            case (2, .failure(let error)):
                #expect(error.field == "events[2].competitions[0].competitors")
            case (3, .failure(let error)):
                #expect(error.field == "events[3].competitions[0].status.type.state")
                #expect(error.reason.contains("sideways"))
            case (2, .success), (3, .success):
                Issue.record("event \(index) should have failed")
            case (_, .failure(let error)):
                Issue.record("event \(index) failed: \(error)")
            case (_, .success):
                break
            }
        }
    }

    // MARK: Expected values, from the raw JSON

    /// What a snapshot says, in a form the raw JSON can also give.
    struct Facts: Equatable, CustomStringConvertible {
        var id: String
        var home: String
        var away: String
        var status: MatchStatus
        var score: String
        var period: String?
        var clock: String?

        var description: String {
            "\(id) \(home) v \(away) \(status) \(score) \(period ?? "-") \(clock ?? "-")"
        }
    }

    static func facts(_ snapshot: MatchSnapshot) -> Facts {
        let teams = ("\(snapshot.home.id)/\(snapshot.home.name)/\(snapshot.home.short)", "\(snapshot.away.id)/\(snapshot.away.name)/\(snapshot.away.short)")
        switch snapshot.score {
        case .teamTotals(let s):
            return Facts(id: snapshot.id, home: teams.0, away: teams.1, status: snapshot.status, score: "\(s.home)-\(s.away)", period: s.period, clock: s.clock)
        case .baseball(let s):
            let bases = s.bases.map { $0 ? "1" : "0" }.joined()
            return Facts(
                id: snapshot.id, home: teams.0, away: teams.1, status: snapshot.status,
                score: "\(s.home)-\(s.away) outs \(s.outs) bases \(bases)", period: "\(s.half.rawValue) \(s.inning)", clock: nil)
        default:
            return Facts(id: snapshot.id, home: teams.0, away: teams.1, status: snapshot.status, score: "?", period: nil, clock: nil)
        }
    }

    /// The facts the event's own JSON states.
    static func expectation(_ event: [String: Any], sport: String) throws -> Facts {
        let id = try #require(event["id"] as? String)
        let competition = try #require((event["competitions"] as? [[String: Any]])?.first)
        let status = try #require((competition["status"] ?? event["status"]) as? [String: Any])
        let type = try #require(status["type"] as? [String: Any])
        let state = try #require(type["state"] as? String)
        let name = type["name"] as? String ?? ""
        let short = type["shortDetail"] as? String ?? ""
        let period = status["period"] as? Int ?? 0
        var sides: [String: (team: String, score: Int)] = [:]
        for competitor in try #require(competition["competitors"] as? [[String: Any]]) {
            let team = try #require(competitor["team"] as? [String: Any])
            let side = try #require(competitor["homeAway"] as? String)
            let score = Self.count(competitor["score"]) ?? (state == "pre" ? 0 : -1)
            sides[side] = ("\(team["id"] as? String ?? "")/\(team["displayName"] as? String ?? "")/\(team["abbreviation"] as? String ?? "")", score)
        }
        let home = try #require(sides["home"])
        let away = try #require(sides["away"])

        let firstWord = short.split(separator: " ").first.map(String.init) ?? ""
        let status_: MatchStatus
        if name == "STATUS_POSTPONED" {
            status_ = .postponed
        } else if name.contains("CANCEL") || name.contains("ABANDON") {
            status_ = .abandoned
        } else if state == "pre" {
            status_ = .scheduled
        } else if state == "post" {
            status_ = type["completed"] as? Bool == true ? .completed : .abandoned
        } else if name == "STATUS_HALFTIME" || name.hasPrefix("STATUS_END") || (sport == "baseball" && ["Mid", "End"].contains(firstWord)) {
            status_ = .break
        } else {
            status_ = .live
        }

        if sport == "baseball" {
            let situation = competition["situation"] as? [String: Any]
            var inning = 1, half = "top", outs = 0, bases = "000"
            switch status_ {
            case .scheduled, .postponed:
                break
            case .completed, .abandoned:
                inning = max(period, 1)
                half = firstWord == "Top" ? "top" : "bottom"
                outs = 3
            case .break:
                inning = max(period, 1)
                half = firstWord == "Mid" ? "top" : "bottom"
                outs = 3
            case .live:
                inning = max(period, 1)
                half = ["Bot", "Bottom"].contains(firstWord) ? "bottom" : "top"
                #expect(["Top", "Bot", "Bottom"].contains(firstWord), "event \(id): live detail '\(short)'")
                outs = situation?["outs"] as? Int ?? 0
                bases = ["onFirst", "onSecond", "onThird"].map { situation?[$0] as? Bool == true ? "1" : "0" }.joined()
            }
            return Facts(
                id: "espn:\(id)", home: home.team, away: away.team, status: status_,
                score: "\(home.score)-\(away.score) outs \(outs) bases \(bases)", period: "\(half) \(inning)", clock: nil)
        }

        // Period and clock from ESPN's own short detail: "8:36 - 3rd", "Halftime", "Final/OT", "FT".
        var expectedPeriod: String?
        var expectedClock: String?
        let prefix = sport == "hockey" ? "P" : sport == "soccer" ? "" : "Q"
        func label(_ ordinal: Substring) -> String? {
            if ordinal.hasSuffix("OT") { return String(ordinal) == "1OT" ? "OT" : String(ordinal) }
            if ordinal == "SO" { return "SO" }
            guard let n = Int(ordinal.prefix { $0.isNumber }) else { return nil }
            return sport == "soccer" ? "\(n)H" : "\(prefix)\(n)"
        }
        switch status_ {
        case .scheduled, .postponed:
            break
        case .completed:
            switch short {
            case "FT": expectedPeriod = "FT"
            case "AET": expectedPeriod = "AET"
            case "FT-Pens", "Pens": expectedPeriod = "PEN"
            case "Final": expectedPeriod = "F"
            case "Final/SO": expectedPeriod = "F/SO"
            default: expectedPeriod = short.hasPrefix("Final/") && short.hasSuffix("OT") ? "F/OT" : "?\(short)"
            }
        case .break:
            if short == "Halftime" || short == "HT" {
                expectedPeriod = "HT"
            } else if let ordinal = short.split(separator: " ").last {
                expectedPeriod = label(ordinal)  // "End of 1st", "End 3rd"
            }
        case .live:
            if sport == "soccer" {
                expectedClock = status["displayClock"] as? String
                expectedPeriod = period <= 2 ? "\(period)H" : period <= 4 ? "ET" : "PEN"
            } else {
                let parts = short.components(separatedBy: " - ")
                #expect(parts.count == 2, "event \(id): live detail '\(short)'")
                expectedClock = parts.first
                expectedPeriod = parts.last.flatMap { label(Substring($0)) }
            }
        case .abandoned:
            expectedPeriod = nil
        }
        return Facts(
            id: "espn:\(id)", home: home.team, away: away.team, status: status_, score: "\(home.score)-\(away.score)",
            period: expectedPeriod, clock: expectedClock)
    }

    /// `"2"`, `2` or `{"value": 2.0, "displayValue": "2"}` as a count.
    static func count(_ value: Any?) -> Int? {
        if let text = value as? String { return Int(text) }
        if let number = value as? NSNumber { return number.intValue }
        if let object = value as? [String: Any] {
            return (object["value"] as? NSNumber)?.intValue ?? (object["displayValue"] as? String).flatMap { Int($0) }
        }
        return nil
    }

    static func matchcastSport(_ espnSport: String) -> Sport? {
        ["soccer": Sport.football, "basketball": .basketball, "football": .americanFootball, "hockey": .hockey,
         "baseball": .baseball][espnSport]
    }

    /// The `{sport}/{league}` a file came from: the sport from ESPN's `uid` (else the file name),
    /// the league from the body's league slug (`all` for the all-soccer scoreboard).
    static func league(of json: [String: Any], file: String) throws -> ESPNLeague {
        let events = json["events"] as? [[String: Any]] ?? []
        let header = json["header"] as? [String: Any]
        let leagues = json["leagues"] as? [[String: Any]] ?? []
        let uids = ([header?["uid"]] + leagues.map { $0["uid"] } + events.map { $0["uid"] }).compactMap { $0 as? String }
        var sport = uids.lazy.compactMap { uid -> String? in
            guard uid.hasPrefix("s:"), let id = uid.dropFirst(2).split(separator: "~").first else { return nil }
            return sportIds[String(id)]
        }.first
        if sport == nil {
            let tokens = file.split(separator: "_").map(String.init)
            sport = tokens.dropFirst().lazy.compactMap { fileTokens[$0] }.first
        }
        let slug = ([header?["league"]] + leagues.map { $0 } + events.map { $0["league"] })
            .compactMap { ($0 as? [String: Any])?["slug"] as? String }.first
        return try ESPNLeague(sport: try #require(sport, "\(file): which ESPN sport?"), league: slug ?? "all")
    }
}
