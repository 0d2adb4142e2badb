import Foundation

/// The feed's bodies read without `Codable` (`StrictJSONReader`), for a changed poll: the same values the types'
/// `init(from:)` make, checked by the same rules, or nil whenever the text or a value is anything those decoders
/// might refuse or read otherwise; `FeedDecoding` then decodes the body with Foundation, which decides and names the
/// error. `FeedBodyReadingTests` holds every answer to Foundation's over the documented shapes, real recordings and
/// thousands of mutated bodies.
enum FeedBodyReading {
    /// `{"retryAfterMs", "match"}`.
    static func match(_ data: Data) -> MatchResponse? {
        read(data) { reader in
            var retryAfterMs: Int?
            var match: MatchSnapshot?
            var seen = Seen()
            let ok = reader.readObject { reader, key in
                if StrictJSONReader.key(key, is: "retryAfterMs") {
                    guard seen.first(0) else { return false }
                    return reader.readOptional(&retryAfterMs) { $0.readInt() }
                } else if StrictJSONReader.key(key, is: "match") {
                    guard seen.first(1) else { return false }
                    match = MatchSnapshot.read(&reader)
                    return match != nil
                }
                return reader.skipValue()
            }
            guard ok, let match else { return nil }
            return MatchResponse(retryAfterMs: retryAfterMs, match: match)
        }
    }

    /// `{"retryAfterMs", "generatedAt", "matches"}`, every match read (any that is not leaves the whole list to
    /// Foundation, which keeps the others and names the failure).
    static func liveMatches(_ data: Data) -> LiveMatchesResponse? {
        read(data) { reader in
            var retryAfterMs: Int?
            var generatedAt: Date?
            var matches: [MatchSnapshot]?
            var seen = Seen()
            let ok = reader.readObject { reader, key in
                if StrictJSONReader.key(key, is: "retryAfterMs") {
                    guard seen.first(0) else { return false }
                    return reader.readOptional(&retryAfterMs) { $0.readInt() }
                } else if StrictJSONReader.key(key, is: "generatedAt") {
                    guard seen.first(1) else { return false }
                    return reader.readOptional(&generatedAt) { $0.readDate() }
                } else if StrictJSONReader.key(key, is: "matches") {
                    guard seen.first(2) else { return false }
                    var list: [MatchSnapshot] = []
                    guard reader.readArray({ reader in
                        guard let snapshot = MatchSnapshot.read(&reader) else { return false }
                        list.append(snapshot)
                        return true
                    }) else { return false }
                    matches = list
                    return true
                } else if StrictJSONReader.key(key, is: "date") {
                    guard seen.first(3) else { return false }
                    var date: String?
                    return reader.readOptional(&date) { $0.readString() }
                }
                return reader.skipValue()
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

/// The keys of one object already read, by the reader's own numbering: a key given twice leaves the body to Foundation.
struct Seen {
    private var bits: UInt32 = 0

    /// True the first time `key` is seen.
    mutating func first(_ key: Int) -> Bool {
        let bit: UInt32 = 1 << UInt32(key)
        guard bits & bit == 0 else { return false }
        bits |= bit
        return true
    }
}

extension StrictJSONReader {
    /// Reads `null` as nil, else a value with `read`: what `decodeIfPresent` makes of a present key.
    mutating func readOptional<Value>(_ target: inout Value?, _ read: (inout StrictJSONReader) -> Value?) -> Bool {
        if readNull() {
            target = nil
            return true
        }
        guard let value = read(&self) else { return false }
        target = value
        return true
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
    /// A snapshot as `init(from:)` decodes it, or nil (see `FeedBodyReading`).
    static func read(_ reader: inout StrictJSONReader) -> MatchSnapshot? {
        var id: String?, sport: Sport?, status: MatchStatus?, startsAt: Date?, updatedAt: Date?, seq: Int?
        var competition: String?, venue: String?, home: Team?, away: Team?, events: [MatchEvent]?
        var scoreAt: Int?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            typealias R = StrictJSONReader
            if R.key(key, is: "id") {
                guard seen.first(0), let value = reader.readNonEmpty(), value.utf8.count <= 128 else { return false }
                id = value
            } else if R.key(key, is: "sport") {
                guard seen.first(1), let value = reader.readRaw(Sport.self) else { return false }
                sport = value
            } else if R.key(key, is: "status") {
                guard seen.first(2), let value = reader.readRaw(MatchStatus.self) else { return false }
                status = value
            } else if R.key(key, is: "startsAt") {
                guard seen.first(3) else { return false }
                return reader.readOptional(&startsAt) { $0.readDate() }
            } else if R.key(key, is: "updatedAt") {
                guard seen.first(4) else { return false }
                return reader.readOptional(&updatedAt) { $0.readDate() }
            } else if R.key(key, is: "seq") {
                guard seen.first(5) else { return false }
                return reader.readOptional(&seq) { $0.readInt() }
            } else if R.key(key, is: "competition") {
                guard seen.first(6) else { return false }
                return reader.readOptional(&competition) { $0.readString() }
            } else if R.key(key, is: "venue") {
                guard seen.first(7) else { return false }
                return reader.readOptional(&venue) { $0.readString() }
            } else if R.key(key, is: "home") {
                guard seen.first(8), let value = Team.read(&reader) else { return false }
                home = value
            } else if R.key(key, is: "away") {
                guard seen.first(9), let value = Team.read(&reader) else { return false }
                away = value
            } else if R.key(key, is: "score") {
                // Its shape depends on `sport`, which may come later: read once the object is done.
                guard seen.first(10) else { return false }
                scoreAt = reader.mark()
                return reader.skipValue()
            } else if R.key(key, is: "events") {
                guard seen.first(11) else { return false }
                return reader.readOptional(&events) { reader in
                    var list: [MatchEvent] = []
                    guard reader.readArray({ reader in
                        guard let event = MatchEvent.read(&reader) else { return false }
                        list.append(event)
                        return true
                    }) else { return nil }
                    return list
                }
            } else {
                return reader.skipValue()
            }
            return true
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
    static func read(_ reader: inout StrictJSONReader) -> Team? {
        var id: String?, name: String?, short: String?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            if StrictJSONReader.key(key, is: "id") {
                guard seen.first(0), let value = reader.readNonEmpty() else { return false }
                id = value
                return true
            } else if StrictJSONReader.key(key, is: "name") {
                guard seen.first(1), let value = reader.readNonEmpty() else { return false }
                name = value
                return true
            } else if StrictJSONReader.key(key, is: "short") {
                guard seen.first(2) else { return false }
                return reader.readOptional(&short) { $0.readString() }
            }
            return reader.skipValue()
        }
        guard ok, let id, let name else { return nil }
        return Team(id: id, name: name, short: short)
    }
}

extension MatchEvent {
    static func read(_ reader: inout StrictJSONReader) -> MatchEvent? {
        var id: String?, type: String?, at: Date?, text: String?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            if StrictJSONReader.key(key, is: "id") {
                guard seen.first(0), let value = reader.readString() else { return false }
                id = value
                return true
            } else if StrictJSONReader.key(key, is: "type") {
                guard seen.first(1), let value = reader.readString() else { return false }
                type = value
                return true
            } else if StrictJSONReader.key(key, is: "at") {
                guard seen.first(2) else { return false }
                return reader.readOptional(&at) { $0.readDate() }
            } else if StrictJSONReader.key(key, is: "text") {
                guard seen.first(3), let value = reader.readString() else { return false }
                text = value
                return true
            }
            return reader.skipValue()
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
    static func read(_ reader: inout StrictJSONReader) -> TeamScore? {
        var home: Int?, away: Int?, period: String?, clock: String?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            if StrictJSONReader.key(key, is: "home") {
                guard seen.first(0), let value = reader.readCount() else { return false }
                home = value
                return true
            } else if StrictJSONReader.key(key, is: "away") {
                guard seen.first(1), let value = reader.readCount() else { return false }
                away = value
                return true
            } else if StrictJSONReader.key(key, is: "period") {
                guard seen.first(2) else { return false }
                return reader.readOptional(&period) { $0.readString() }
            } else if StrictJSONReader.key(key, is: "clock") {
                guard seen.first(3) else { return false }
                return reader.readOptional(&clock) { $0.readString() }
            }
            return reader.skipValue()
        }
        guard ok, let home, let away else { return nil }
        return TeamScore(home: home, away: away, period: period, clock: clock)
    }
}

extension TennisScore {
    static func read(_ reader: inout StrictJSONReader) -> TennisScore? {
        var bestOf: Int?, tiebreak: Int?, server: Side?, points: String?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            if StrictJSONReader.key(key, is: "bestOf") {
                guard seen.first(0) else { return false }
                return reader.readOptional(&bestOf) { $0.readInt() }
            } else if StrictJSONReader.key(key, is: "finalSetTiebreak") {
                guard seen.first(1) else { return false }
                return reader.readOptional(&tiebreak) { $0.readInt() }
            } else if StrictJSONReader.key(key, is: "firstServer") {
                guard seen.first(2) else { return false }
                return reader.readOptional(&server) { $0.readRaw(Side.self) }
            } else if StrictJSONReader.key(key, is: "points") {
                guard seen.first(3) else { return false }
                return reader.readOptional(&points) { $0.readString() }
            }
            return reader.skipValue()
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
    static func read(_ reader: inout StrictJSONReader) -> BaseballScore? {
        var home: Int?, away: Int?, inning: Int?, half: Half?, outs: Int?, bases: [Bool]?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            typealias R = StrictJSONReader
            if R.key(key, is: "home") {
                guard seen.first(0), let value = reader.readCount() else { return false }
                home = value
            } else if R.key(key, is: "away") {
                guard seen.first(1), let value = reader.readCount() else { return false }
                away = value
            } else if R.key(key, is: "inning") {
                guard seen.first(2), let value = reader.readCount(in: 1...99) else { return false }
                inning = value
            } else if R.key(key, is: "half") {
                guard seen.first(3), let value = reader.readRaw(Half.self) else { return false }
                half = value
            } else if R.key(key, is: "outs") {
                guard seen.first(4), let value = reader.readCount(in: 0...3) else { return false }
                outs = value
            } else if R.key(key, is: "bases") {
                guard seen.first(5) else { return false }
                return reader.readOptional(&bases) { reader in
                    var list: [Bool] = []
                    guard reader.readArray({ reader in
                        guard let value = reader.readBool() else { return false }
                        list.append(value)
                        return true
                    }) else { return nil }
                    return list
                }
            } else {
                return reader.skipValue()
            }
            return true
        }
        let runners = bases ?? [false, false, false]
        guard ok, let home, let away, let inning, let half, let outs, runners.count == 3 else { return nil }
        return BaseballScore(home: home, away: away, inning: inning, half: half, outs: outs, bases: runners)
    }
}

extension CricketScore {
    static func read(_ reader: inout StrictJSONReader) -> CricketScore? {
        var format: Format?, oversLimit: Int?, innings: [Innings]?, batters: [Batter]?, bowler: Bowler?
        var method: String?, winner: String?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            typealias R = StrictJSONReader
            if R.key(key, is: "format") {
                guard seen.first(0), let value = reader.readRaw(Format.self) else { return false }
                format = value
                return true
            } else if R.key(key, is: "oversLimit") {
                guard seen.first(1) else { return false }
                return reader.readOptional(&oversLimit) { $0.readInt() }
            } else if R.key(key, is: "innings") {
                guard seen.first(2) else { return false }
                return reader.readOptional(&innings) { $0.readList(Innings.read) }
            } else if R.key(key, is: "batters") {
                guard seen.first(3) else { return false }
                return reader.readOptional(&batters) { $0.readList(Batter.read) }
            } else if R.key(key, is: "bowler") {
                guard seen.first(4) else { return false }
                return reader.readOptional(&bowler) { Bowler.read(&$0) }
            } else if R.key(key, is: "method") {
                guard seen.first(5) else { return false }
                return reader.readOptional(&method) { $0.readString() }
            } else if R.key(key, is: "winner") {
                guard seen.first(6) else { return false }
                return reader.readOptional(&winner) { $0.readString() }
            }
            return reader.skipValue()
        }
        guard ok, let format else { return nil }
        if let oversLimit, !(1...100).contains(oversLimit) { return nil }
        return CricketScore(format: format, oversLimit: oversLimit, innings: innings ?? [], batters: batters ?? [],
                            bowler: bowler, method: method, winner: winner)
    }
}

extension CricketScore.Innings {
    static func read(_ reader: inout StrictJSONReader) -> Self? {
        var team: String?, runs: Int?, wickets: Int?, balls: Int?, target: Int?, superOver: Bool?, oversLimit: Int?
        var declared: Bool?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            typealias R = StrictJSONReader
            if R.key(key, is: "team") {
                guard seen.first(0), let value = reader.readNonEmpty() else { return false }
                team = value
            } else if R.key(key, is: "runs") {
                guard seen.first(1), let value = reader.readCount() else { return false }
                runs = value
            } else if R.key(key, is: "wickets") {
                guard seen.first(2), let value = reader.readCount(in: 0...10) else { return false }
                wickets = value
            } else if R.key(key, is: "balls") {
                guard seen.first(3), let value = reader.readCount() else { return false }
                balls = value
            } else if R.key(key, is: "target") {
                guard seen.first(4) else { return false }
                return reader.readOptional(&target) { $0.readInt() }
            } else if R.key(key, is: "superOver") {
                guard seen.first(5) else { return false }
                return reader.readOptional(&superOver) { $0.readBool() }
            } else if R.key(key, is: "oversLimit") {
                guard seen.first(6) else { return false }
                return reader.readOptional(&oversLimit) { $0.readInt() }
            } else if R.key(key, is: "declared") {
                guard seen.first(7) else { return false }
                return reader.readOptional(&declared) { $0.readBool() }
            } else {
                return reader.skipValue()
            }
            return true
        }
        guard ok, let team, let runs, let wickets, let balls else { return nil }
        return Self(team: team, runs: runs, wickets: wickets, balls: balls, target: target,
                    superOver: superOver ?? false, oversLimit: oversLimit, declared: declared ?? false)
    }
}

extension CricketScore.Batter {
    static func read(_ reader: inout StrictJSONReader) -> Self? {
        var name: String?, runs: Int?, balls: Int?, onStrike: Bool?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            typealias R = StrictJSONReader
            if R.key(key, is: "name") {
                guard seen.first(0), let value = reader.readNonEmpty() else { return false }
                name = value
            } else if R.key(key, is: "runs") {
                guard seen.first(1), let value = reader.readCount() else { return false }
                runs = value
            } else if R.key(key, is: "balls") {
                guard seen.first(2), let value = reader.readCount() else { return false }
                balls = value
            } else if R.key(key, is: "onStrike") {
                guard seen.first(3) else { return false }
                return reader.readOptional(&onStrike) { $0.readBool() }
            } else {
                return reader.skipValue()
            }
            return true
        }
        guard ok, let name, let runs, let balls else { return nil }
        return Self(name: name, runs: runs, balls: balls, onStrike: onStrike ?? false)
    }
}

extension CricketScore.Bowler {
    static func read(_ reader: inout StrictJSONReader) -> Self? {
        var name: String?, balls: Int?, runs: Int?, wickets: Int?
        var seen = Seen()
        let ok = reader.readObject { reader, key in
            typealias R = StrictJSONReader
            if R.key(key, is: "name") {
                guard seen.first(0), let value = reader.readNonEmpty() else { return false }
                name = value
            } else if R.key(key, is: "balls") {
                guard seen.first(1), let value = reader.readCount() else { return false }
                balls = value
            } else if R.key(key, is: "runs") {
                guard seen.first(2), let value = reader.readCount() else { return false }
                runs = value
            } else if R.key(key, is: "wickets") {
                guard seen.first(3), let value = reader.readCount(in: 0...10) else { return false }
                wickets = value
            } else {
                return reader.skipValue()
            }
            return true
        }
        guard ok, let name, let balls, let runs, let wickets else { return nil }
        return Self(name: name, balls: balls, runs: runs, wickets: wickets)
    }
}

extension StrictJSONReader {
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
}
