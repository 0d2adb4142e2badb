import Foundation
import Testing
@testable import MatchcastCore

// `CanonicalJSONWriter` promises the bytes `JSON.encoder()` makes: every type it writes, every shape (each optional
// present and absent), every string a feed may send, every date, held to the encoder's output.

@Suite("Canonical JSON: the bytes of JSON.encoder()")
struct CanonicalJSONTests {
    static func expectSameBytes<Value: CanonicalJSONWritable>(
        _ value: Value, sourceLocation: SourceLocation = #_sourceLocation
    ) throws {
        let expected = try JSON.encoder().encode(value)
        let written = CanonicalJSONWriter.encode(value)
        #expect(String(decoding: written, as: UTF8.self) == String(decoding: expected, as: UTF8.self),
                sourceLocation: sourceLocation)
        #expect(written == Array(expected), sourceLocation: sourceLocation)
    }

    /// Strings a hostile or careless feed may send: every ASCII byte (each control character alone and in a run),
    /// slashes, quotes, backslashes, non-ASCII letters, emoji, the line separators JavaScript cares about.
    static let awkwardStrings: [String] = {
        var strings = (0..<128).map { String(UnicodeScalar(UInt8($0))) }
        strings += [
            "", " ", "Manchester United", "a/b", "</script>", #"say "hi""#, #"C:\path\"#, "tab\there", "line\nbreak",
            "\r\n", "\u{7F}", "é", "Müller", "日本", "🏏 6!", "\u{2028}\u{2029}", "\u{FEFF}", "a\u{0}b",
            String(repeating: "x", count: 300), "\u{1}\u{2}\u{1F}\"\\/",
        ]
        return strings
    }()

    @Test("strings: every ASCII character, quotes, slashes, control characters, non-ASCII text")
    func strings() throws {
        for string in Self.awkwardStrings {
            try Self.expectSameBytes(Team(id: string, name: string, short: string))
            try Self.expectSameBytes(MatchEvent(id: "e", type: string, text: string))
        }
    }

    @Test("integers: zero, signs, the extremes")
    func integers() throws {
        for value in [0, 1, -1, 9, 10, 99, 100, 12_345, -98_765, Int.max, Int.min, Int(Int32.max), 1_000_000] {
            try Self.expectSameBytes(TeamScore(home: value, away: value == Int.min ? Int.max : -value, period: nil, clock: nil))
            try Self.expectSameBytes(Self.football(seq: value))
        }
    }

    @Test("dates: JSON.formatDate gives Foundation's ISO 8601 text, whole seconds, across the years it writes")
    func dates() throws {
        var rng = SeededGenerator(seed: 7)
        var seconds: [Double] = [
            0, -1, 1, 0.999, -0.5, 86_399, 86_400, -86_400, 951_782_400 /* 2000-02-29 */, 1_776_780_729.75,
            -62_135_596_800 /* 0001-01-01 */, 253_402_300_799 /* 9999-12-31T23:59:59 */, 4_107_542_400 /* 2100-03-01 */,
            -2_208_988_800 /* 1900-01-01 */, 1_709_164_800 /* 2024-02-29 */,
        ]
        for _ in 0..<5_000 { seconds.append(Double(Int64.random(in: -62_135_596_800...253_402_300_799, using: &rng))) }
        for _ in 0..<2_000 { seconds.append(Double.random(in: 0...4_102_444_800, using: &rng)) }
        for value in seconds {
            let date = Date(timeIntervalSince1970: value)
            let foundation = Date(timeIntervalSince1970: value.rounded(.down)).formatted(.iso8601)
            #expect(JSON.formatDate(date) == foundation, "\(value)")
        }
        try Self.expectSameBytes(MatchEvent(id: "e", type: "goal", at: Date(timeIntervalSince1970: 1_776_780_721.5), text: "Goal"))
    }

    @Test("snapshots of every sport, with every optional field present and absent")
    func snapshots() throws {
        for snapshot in Self.snapshots {
            try Self.expectSameBytes(snapshot)
        }
    }

    @Test("content states: every field present, none present, each family's")
    func contentStates() throws {
        let bare = ContentState(status: "live", statusText: "Live", home: .init(name: "MI", score: "87/6 (14.2)"),
                                away: .init(name: "CSK", score: "Yet to bat"), summary: "MI 87/6 (14.2)")
        try Self.expectSameBytes(bare)
        var full = bare
        full.event = "WICKET! \"Dhoni\" c Rohit b Bumrah / 12 (9)"
        full.result = "MI won by 27 runs"
        full.batting = "mi"
        full.runRate = "RR 6.07"
        full.equation = "CSK need 78 from 34"
        full.requiredRate = "RRR 13.76"
        full.batters = ["Rohit Sharma 45* (32)", "Tilak Varma 3 (4)"]
        full.bowler = "Bumrah 2/18 (3.2)"
        full.sets = "6-4 3-2"
        full.game = "30-15"
        full.serving = .away
        full.period = "2H"
        full.clock = "67'"
        full.inning = "Top 7th"
        full.outs = "2 outs"
        full.bases = "1st, 3rd"
        try Self.expectSameBytes(full)
        var empty = bare
        empty.batters = []
        try Self.expectSameBytes(empty)
        for string in Self.awkwardStrings {
            var odd = full
            odd.summary = string
            odd.home = .init(name: string, score: string)
            try Self.expectSameBytes(odd)
        }
    }

    static func football(seq: Int?) -> MatchSnapshot {
        MatchSnapshot(
            id: "epl-mun-liv", sport: .football, status: .live, seq: seq, home: Team(id: "mun", name: "Manchester United"),
            away: Team(id: "liv", name: "Liverpool", short: "LIV"), score: .teamTotals(TeamScore(home: 2, away: 1)))
    }

    static var snapshots: [MatchSnapshot] {
        let at = Date(timeIntervalSince1970: 1_776_780_729)
        let events = [
            MatchEvent(id: "e-1", type: "goal", at: at, text: "Goal! Rashford 67'"),
            MatchEvent(id: "e-2", type: "card", text: "Yellow card"),
        ]
        var list: [MatchSnapshot] = [football(seq: nil), football(seq: 412)]
        var full = football(seq: 9)
        full.startsAt = at.addingTimeInterval(-4_000)
        full.updatedAt = at
        full.competition = "Premier League"
        full.venue = "Old Trafford"
        full.events = events
        full.score = .teamTotals(TeamScore(home: 3, away: 2, period: "2H", clock: "90+3'"))
        list.append(full)
        for sport in [Sport.basketball, .hockey, .americanFootball] {
            var other = full
            other.sport = sport
            list.append(other)
        }
        for status in MatchStatus.allCases {
            var other = full
            other.status = status
            list.append(other)
        }
        let cricket = CricketScore(
            format: .t20, oversLimit: 20,
            innings: [
                CricketScore.Innings(team: "mi", runs: 164, wickets: 8, balls: 120),
                CricketScore.Innings(team: "csk", runs: 87, wickets: 6, balls: 86, target: 165, superOver: true,
                                     oversLimit: 18, declared: true),
            ],
            batters: [CricketScore.Batter(name: "Rohit Sharma", runs: 45, balls: 32, onStrike: true),
                      CricketScore.Batter(name: "Tilak Varma", runs: 3, balls: 4)],
            bowler: CricketScore.Bowler(name: "Jasprit Bumrah", balls: 20, runs: 18, wickets: 2),
            method: "D/L", winner: "mi")
        list.append(MatchSnapshot(
            id: "ipl-2026-m41", sport: .cricket, status: .live, startsAt: at, updatedAt: at, seq: 412,
            competition: "IPL 2026", venue: "Wankhede Stadium, Mumbai", home: Team(id: "mi", name: "Mumbai Indians"),
            away: Team(id: "csk", name: "Chennai Super Kings", short: "CSK"), score: .cricket(cricket), events: events))
        for format in [CricketScore.Format.t20, .odi, .test] {
            list.append(MatchSnapshot(
                id: "c-\(format)", sport: .cricket, status: .scheduled, home: Team(id: "a", name: "A"), away: Team(id: "b", name: "B"),
                score: .cricket(CricketScore(format: format, innings: []))))
        }
        for (bestOf, server, tiebreak) in [(3, Side.home, 7), (5, .away, 10), (5, .home, 0)] {
            list.append(MatchSnapshot(
                id: "wim-\(bestOf)", sport: .tennis, status: .live, seq: 3, home: Team(id: "a", name: "Carlos Alcaraz"),
                away: Team(id: "b", name: "Jannik Sinner"),
                score: .tennis(TennisScore(rules: TennisRules(bestOf: bestOf, firstServer: server, finalSetTiebreak: tiebreak),
                                           points: "HHAHAAHH"))))
        }
        for half in [BaseballScore.Half.top, .bottom] {
            list.append(MatchSnapshot(
                id: "mlb-\(half)", sport: .baseball, status: .live, home: Team(id: "nyy", name: "Yankees"),
                away: Team(id: "bos", name: "Red Sox"),
                score: .baseball(BaseballScore(home: 3, away: 11, inning: 7, half: half, outs: 2, bases: [true, false, true]))))
        }
        for sport in Sport.allCases {
            list.append(MatchSnapshot(id: "empty-\(sport)", sport: sport, status: .scheduled, home: Team(id: "h", name: "Home"),
                                      away: Team(id: "a", name: "Away"), score: .empty(for: sport)))
        }
        return list
    }
}
