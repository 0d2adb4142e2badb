import Foundation

/// The feed's bodies read without `Codable` (`StrictJSONReader`), for a changed poll: the same values the types'
/// `init(from:)` make, checked by the same rules, or nil whenever the text or a value is anything those decoders
/// might refuse or read otherwise; `FeedDecoding` then decodes the body with Foundation, which decides and names the
/// error. `FeedBodyReadingTests` holds every answer to Foundation's over the documented shapes, mutated bodies and
/// (with `MATCHCAST_REALDATA`) real recordings.
enum FeedBodyReading {
    private static let listKeys: [StaticString] = ["retryAfterMs", "generatedAt", "date", "matches"]
    private static let matchKeys: [StaticString] = ["retryAfterMs", "match"]
    /// `{"retryAfterMs", "match"}`.
    static func match(_ data: Data) -> MatchResponse? {
        read(data) { reader in
            var retryAfterMs: Int?
            var match: MatchSnapshot?
            let ok = reader.readObject(keys: matchKeys) { reader, key in
                switch key {
                case 0: reader.optional(&retryAfterMs) { $0.readInt() }
                case 1: reader.required(&match) { MatchSnapshot.read(&$0) }
                default: reader.skipValue()
                }
            }
            guard ok, let match else { return nil }
            return MatchResponse(retryAfterMs: retryAfterMs, match: match)
        }
    }

    /// `{"retryAfterMs", "generatedAt", "date", "matches"}`, every match read (any that is not leaves the whole list
    /// to Foundation, which keeps the others and names the failure).
    static func liveMatches(_ data: Data) -> LiveMatchesResponse? {
        read(data) { reader in
            var retryAfterMs: Int?
            var generatedAt: Date?
            var date: String?
            var matches: [MatchSnapshot]?
            let ok = reader.readObject(keys: listKeys) { reader, key in
                switch key {
                case 0: reader.optional(&retryAfterMs) { $0.readInt() }
                case 1: reader.optional(&generatedAt) { $0.readDate() }
                case 2: reader.optional(&date) { $0.readString() }
                case 3: reader.required(&matches) { $0.readList(MatchSnapshot.read) }
                default: reader.skipValue()
                }
            }
            guard ok, let matches else { return nil }
            return LiveMatchesResponse(retryAfterMs: retryAfterMs, generatedAt: generatedAt, matches: matches)
        }
    }

    /// `body` run over `data`'s bytes; nil unless it reads the whole text (nothing but white space after).
    private static func read<Value>(_ data: Data, _ body: (inout StrictJSONReader) -> Value?) -> Value? {
        data.withUnsafeBytes { raw in
            var reader = StrictJSONReader(raw.assumingMemoryBound(to: UInt8.self))
            guard let value = body(&reader), reader.isAtEnd() else { return nil }
            return value
        }
    }
}

extension StrictJSONReader {
    /// An object of the fields `keys` names (at most 32; each type keeps its table in a static, so a read allocates none): `member` is called with each field's index in `keys`, or
    /// nil for a key not among them, and reads its value. A known key given twice leaves the body to Foundation.
    mutating func readObject(keys: [StaticString], _ member: (inout StrictJSONReader, Int?) -> Bool) -> Bool {
        var seen: UInt32 = 0
        return readObject { reader, key in
            guard let index = keys.firstIndex(where: { StrictJSONReader.key(key, is: $0) }) else {
                return member(&reader, nil)
            }
            let bit: UInt32 = 1 << UInt32(index)
            guard seen & bit == 0 else { return false }
            seen |= bit
            return member(&reader, index)
        }
    }

    /// A field that must hold a value (`decode`): null or a value `read` refuses leaves the body to Foundation.
    mutating func required<Value>(_ target: inout Value?, _ read: (inout StrictJSONReader) -> Value?) -> Bool {
        guard let value = read(&self) else { return false }
        target = value
        return true
    }

    /// A field that may be null (`decodeIfPresent`): null reads as nil, anything else with `read`.
    mutating func optional<Value>(_ target: inout Value?, _ read: (inout StrictJSONReader) -> Value?) -> Bool {
        if readNull() {
            target = nil
            return true
        }
        return required(&target, read)
    }

    /// An array whose every element `read` reads.
    mutating func readList<Element>(_ read: (inout StrictJSONReader) -> Element?) -> [Element]? {
        var list: [Element] = []
        guard readArray({ reader in
            guard let element = read(&reader) else { return false }
            list.append(element)
            return true
        }) else { return nil }
        return list
    }

    /// A date as `JSON.decoder()` reads one.
    mutating func readDate() -> Date? {
        readString().flatMap(JSON.parseDate)
    }

    /// A string that is not empty or only white space (`decodeNonEmpty`).
    mutating func readNonEmpty() -> String? {
        guard let value = readString(), !value.allSatisfy(\.isWhitespace) else { return nil }
        return value
    }

    /// An integer in `range` (`decodeCount`).
    mutating func readCount(in range: ClosedRange<Int> = 0...1_000_000) -> Int? {
        guard let value = readInt(), range.contains(value) else { return nil }
        return value
    }

    mutating func readRaw<Raw: RawRepresentable<String>>(_ type: Raw.Type) -> Raw? {
        readString().flatMap(Raw.init(rawValue:))
    }
}

extension MatchSnapshot {
    private static let keys: [StaticString] = [
        "id", "sport", "status", "startsAt", "updatedAt", "seq", "competition", "venue", "home", "away", "score", "events",
    ]

    /// A snapshot as `init(from:)` decodes it, or nil (see `FeedBodyReading`).
    static func read(_ reader: inout StrictJSONReader) -> MatchSnapshot? {
        var id: String?, sport: Sport?, status: MatchStatus?, startsAt: Date?, updatedAt: Date?, seq: Int?
        var competition: String?, venue: String?, home: Team?, away: Team?, events: [MatchEvent]?
        var scoreAt: Int?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&id) { reader in reader.readNonEmpty().flatMap { $0.utf8.count <= 128 ? $0 : nil } }
            case 1: reader.required(&sport) { $0.readRaw(Sport.self) }
            case 2: reader.required(&status) { $0.readRaw(MatchStatus.self) }
            case 3: reader.optional(&startsAt) { $0.readDate() }
            case 4: reader.optional(&updatedAt) { $0.readDate() }
            case 5: reader.optional(&seq) { $0.readInt() }
            case 6: reader.optional(&competition) { $0.readString() }
            case 7: reader.optional(&venue) { $0.readString() }
            case 8: reader.required(&home) { Team.read(&$0) }
            case 9: reader.required(&away) { Team.read(&$0) }
            // The score's shape depends on `sport`, which may come later: read once the object is done.
            case 10: reader.skipValue(markingAt: &scoreAt)
            case 11: reader.optional(&events) { $0.readList(MatchEvent.read) }
            default: reader.skipValue()
            }
        }
        guard ok, let id, let sport, let status, let home, let away else { return nil }
        var score = Score.empty(for: sport)
        if let scoreAt {
            var scoreReader = reader.reread(at: scoreAt)
            if !scoreReader.readNull() {
                guard let read = Score.read(sport, &scoreReader) else { return nil }
                score = read
            }
        }
        return MatchSnapshot(
            id: id, sport: sport, status: status, startsAt: startsAt, updatedAt: updatedAt, seq: seq,
            competition: competition, venue: venue, home: home, away: away, score: score, events: events ?? [])
    }
}

extension Team {
    private static let keys: [StaticString] = ["id", "name", "short"]

    static func read(_ reader: inout StrictJSONReader) -> Team? {
        var id: String?, name: String?, short: String?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&id) { $0.readNonEmpty() }
            case 1: reader.required(&name) { $0.readNonEmpty() }
            case 2: reader.optional(&short) { $0.readString() }
            default: reader.skipValue()
            }
        }
        guard ok, let id, let name else { return nil }
        return Team(id: id, name: name, short: short)
    }
}

extension MatchEvent {
    private static let keys: [StaticString] = ["id", "type", "at", "text"]

    static func read(_ reader: inout StrictJSONReader) -> MatchEvent? {
        var id: String?, type: String?, at: Date?, text: String?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&id) { $0.readString() }
            case 1: reader.required(&type) { $0.readString() }
            case 2: reader.optional(&at) { $0.readDate() }
            case 3: reader.required(&text) { $0.readString() }
            default: reader.skipValue()
            }
        }
        guard ok, let id, let type, let text else { return nil }
        return MatchEvent(id: id, type: type, at: at, text: text)
    }
}

extension Score {
    /// The `score` object of a `sport` snapshot (not null: the caller reads that as the empty score).
    static func read(_ sport: Sport, _ reader: inout StrictJSONReader) -> Score? {
        switch sport {
        case .football, .basketball, .hockey, .americanFootball: TeamScore.read(&reader).map(Score.teamTotals)
        case .tennis: TennisScore.read(&reader).map(Score.tennis)
        case .baseball: BaseballScore.read(&reader).map(Score.baseball)
        case .cricket: CricketScore.read(&reader).map(Score.cricket)
        }
    }
}

extension TeamScore {
    private static let keys: [StaticString] = ["home", "away", "period", "clock"]

    static func read(_ reader: inout StrictJSONReader) -> TeamScore? {
        var home: Int?, away: Int?, period: String?, clock: String?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&home) { $0.readCount() }
            case 1: reader.required(&away) { $0.readCount() }
            case 2: reader.optional(&period) { $0.readString() }
            case 3: reader.optional(&clock) { $0.readString() }
            default: reader.skipValue()
            }
        }
        guard ok, let home, let away else { return nil }
        return TeamScore(home: home, away: away, period: period, clock: clock)
    }
}

extension TennisScore {
    private static let keys: [StaticString] = ["bestOf", "finalSetTiebreak", "firstServer", "points"]

    static func read(_ reader: inout StrictJSONReader) -> TennisScore? {
        var bestOf: Int?, tiebreak: Int?, server: Side?, points: String?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.optional(&bestOf) { $0.readInt() }
            case 1: reader.optional(&tiebreak) { $0.readInt() }
            case 2: reader.optional(&server) { $0.readRaw(Side.self) }
            case 3: reader.optional(&points) { $0.readString() }
            default: reader.skipValue()
            }
        }
        let best = bestOf ?? 3, finalTiebreak = tiebreak ?? 7, played = points ?? ""
        guard ok, best == 3 || best == 5, [0, 7, 10].contains(finalTiebreak),
              played.utf8.allSatisfy({ $0 == UInt8(ascii: "H") || $0 == UInt8(ascii: "A") })
        else { return nil }
        return TennisScore(
            rules: TennisRules(bestOf: best, firstServer: server ?? .home, finalSetTiebreak: finalTiebreak), points: played)
    }
}

extension BaseballScore {
    private static let keys: [StaticString] = ["home", "away", "inning", "half", "outs", "bases"]

    static func read(_ reader: inout StrictJSONReader) -> BaseballScore? {
        var home: Int?, away: Int?, inning: Int?, half: Half?, outs: Int?, bases: [Bool]?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&home) { $0.readCount() }
            case 1: reader.required(&away) { $0.readCount() }
            case 2: reader.required(&inning) { $0.readCount(in: 1...99) }
            case 3: reader.required(&half) { $0.readRaw(Half.self) }
            case 4: reader.required(&outs) { $0.readCount(in: 0...3) }
            case 5: reader.optional(&bases) { $0.readList { $0.readBool() } }
            default: reader.skipValue()
            }
        }
        let runners = bases ?? [false, false, false]
        guard ok, let home, let away, let inning, let half, let outs, runners.count == 3 else { return nil }
        return BaseballScore(home: home, away: away, inning: inning, half: half, outs: outs, bases: runners)
    }
}

extension CricketScore {
    private static let keys: [StaticString] = ["format", "oversLimit", "innings", "batters", "bowler", "method", "winner"]

    static func read(_ reader: inout StrictJSONReader) -> CricketScore? {
        var format: Format?, oversLimit: Int?, innings: [Innings]?, batters: [Batter]?, bowler: Bowler?
        var method: String?, winner: String?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&format) { $0.readRaw(Format.self) }
            case 1: reader.optional(&oversLimit) { reader in reader.readInt().flatMap { (1...100).contains($0) ? $0 : nil } }
            case 2: reader.optional(&innings) { $0.readList(Innings.read) }
            case 3: reader.optional(&batters) { $0.readList(Batter.read) }
            case 4: reader.optional(&bowler) { Bowler.read(&$0) }
            case 5: reader.optional(&method) { $0.readString() }
            case 6: reader.optional(&winner) { $0.readString() }
            default: reader.skipValue()
            }
        }
        guard ok, let format else { return nil }
        return CricketScore(format: format, oversLimit: oversLimit, innings: innings ?? [], batters: batters ?? [],
                            bowler: bowler, method: method, winner: winner)
    }
}

extension CricketScore.Innings {
    private static let keys: [StaticString] = [
        "team", "runs", "wickets", "balls", "target", "superOver", "oversLimit", "declared",
    ]

    static func read(_ reader: inout StrictJSONReader) -> Self? {
        var team: String?, runs: Int?, wickets: Int?, balls: Int?, target: Int?, superOver: Bool?, oversLimit: Int?
        var declared: Bool?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&team) { $0.readNonEmpty() }
            case 1: reader.required(&runs) { $0.readCount() }
            case 2: reader.required(&wickets) { $0.readCount(in: 0...10) }
            case 3: reader.required(&balls) { $0.readCount() }
            case 4: reader.optional(&target) { $0.readInt() }
            case 5: reader.optional(&superOver) { $0.readBool() }
            case 6: reader.optional(&oversLimit) { $0.readInt() }
            case 7: reader.optional(&declared) { $0.readBool() }
            default: reader.skipValue()
            }
        }
        guard ok, let team, let runs, let wickets, let balls else { return nil }
        return Self(team: team, runs: runs, wickets: wickets, balls: balls, target: target,
                    superOver: superOver ?? false, oversLimit: oversLimit, declared: declared ?? false)
    }
}

extension CricketScore.Batter {
    private static let keys: [StaticString] = ["name", "runs", "balls", "onStrike"]

    static func read(_ reader: inout StrictJSONReader) -> Self? {
        var name: String?, runs: Int?, balls: Int?, onStrike: Bool?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&name) { $0.readNonEmpty() }
            case 1: reader.required(&runs) { $0.readCount() }
            case 2: reader.required(&balls) { $0.readCount() }
            case 3: reader.optional(&onStrike) { $0.readBool() }
            default: reader.skipValue()
            }
        }
        guard ok, let name, let runs, let balls else { return nil }
        return Self(name: name, runs: runs, balls: balls, onStrike: onStrike ?? false)
    }
}

extension CricketScore.Bowler {
    private static let keys: [StaticString] = ["name", "balls", "runs", "wickets"]

    static func read(_ reader: inout StrictJSONReader) -> Self? {
        var name: String?, balls: Int?, runs: Int?, wickets: Int?
        let ok = reader.readObject(keys: keys) { reader, key in
            switch key {
            case 0: reader.required(&name) { $0.readNonEmpty() }
            case 1: reader.required(&balls) { $0.readCount() }
            case 2: reader.required(&runs) { $0.readCount() }
            case 3: reader.required(&wickets) { $0.readCount(in: 0...10) }
            default: reader.skipValue()
            }
        }
        guard ok, let name, let balls, let runs, let wickets else { return nil }
        return Self(name: name, balls: balls, runs: runs, wickets: wickets)
    }
}
