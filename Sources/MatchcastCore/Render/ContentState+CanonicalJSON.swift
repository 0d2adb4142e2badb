/// The content a fan-out sent, written as `JSON.encoder()` writes it (`CanonicalJSONWriter`): the durable stores
/// keep it once per match and version. Keys in sorted order; every optional left out when nil, as the synthesized
/// `encode(to:)` leaves it.
extension ContentState: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("away", away)
            json.field("bases", bases)
            json.field("batters", batters)
            json.field("batting", batting)
            json.field("bowler", bowler)
            json.field("clock", clock)
            json.field("equation", equation)
            json.field("event", event)
            json.field("game", game)
            json.field("home", home)
            json.field("inning", inning)
            json.field("outs", outs)
            json.field("period", period)
            json.field("requiredRate", requiredRate)
            json.field("result", result)
            json.field("runRate", runRate)
            json.field("serving", serving)
            json.field("sets", sets)
            json.field("status", status)
            json.field("statusText", statusText)
            json.field("summary", summary)
        }
    }
}

extension ContentState.Line: CanonicalJSONWritable {
    public func write(to json: inout CanonicalJSONWriter) {
        json.object { json in
            json.field("name", name)
            json.field("score", score)
        }
    }
}
