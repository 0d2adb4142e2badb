/// A snapshot written as `JSON.encoder()` writes it (`CanonicalJSONWriter`): its row in the durable stores on every
/// changed poll. Each type names its keys in sorted order and writes what its `encode(to:)` (written or synthesized)
/// writes; `CanonicalJSONTests` holds the bytes to the encoder's.
extension MatchSnapshot: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("away", away)
            json.field("competition", competition)
            if !events.isEmpty { json.field("events", events) }
            json.field("home", home)
            json.field("id", id)
            switch score {
            case .cricket(let score): json.field("score", score)
            case .tennis(let score): json.field("score", score)
            case .teamTotals(let score): json.field("score", score)
            case .baseball(let score): json.field("score", score)
            }
            json.field("seq", seq)
            json.field("sport", sport)
            json.field("startsAt", startsAt)
            json.field("status", status)
            json.field("updatedAt", updatedAt)
            json.field("venue", venue)
        }
    }
}

extension Sport: CanonicalJSONRawValue {}
extension MatchStatus: CanonicalJSONRawValue {}
extension Side: CanonicalJSONRawValue {}
extension CricketScore.Format: CanonicalJSONRawValue {}
extension BaseballScore.Half: CanonicalJSONRawValue {}

extension Team: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("id", id)
            json.field("name", name)
            json.field("short", short)
        }
    }
}

extension MatchEvent: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("at", at)
            json.field("id", id)
            json.field("text", text)
            json.field("type", type)
        }
    }
}

extension TeamScore: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("away", away)
            json.field("clock", clock)
            json.field("home", home)
            json.field("period", period)
        }
    }
}

extension TennisScore: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("bestOf", rules.bestOf)
            json.field("finalSetTiebreak", rules.finalSetTiebreak)
            json.field("firstServer", rules.firstServer)
            json.field("points", points)
        }
    }
}

extension BaseballScore: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("away", away)
            json.field("bases", bases)
            json.field("half", half)
            json.field("home", home)
            json.field("inning", inning)
            json.field("outs", outs)
        }
    }
}

extension CricketScore: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("batters", batters)
            json.field("bowler", bowler)
            json.field("format", format)
            json.field("innings", innings)
            json.field("method", method)
            json.field("oversLimit", oversLimit)
            json.field("winner", winner)
        }
    }
}

extension CricketScore.Innings: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("balls", balls)
            if declared { json.field("declared", true) }
            json.field("oversLimit", oversLimit)
            json.field("runs", runs)
            if superOver { json.field("superOver", true) }
            json.field("target", target)
            json.field("team", team)
            json.field("wickets", wickets)
        }
    }
}

extension CricketScore.Batter: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("balls", balls)
            json.field("name", name)
            json.field("onStrike", onStrike)
            json.field("runs", runs)
        }
    }
}

extension CricketScore.Bowler: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("balls", balls)
            json.field("name", name)
            json.field("runs", runs)
            json.field("wickets", wickets)
        }
    }
}
