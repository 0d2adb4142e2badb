/// Cricket moments worth an alert between two snapshots of one match.
///
/// Rules (each alert's title is the score line of the innings it concerns, "MI 87/6 (14.2)"):
/// - wicket: an innings' wickets grew (an innings new since `previous` counts from 0). Body: the
///   text of the newest new feed event of type "wicket"; else, when the innings is still the
///   current one, the batters who left the list, "Rohit Sharma out for 45 (32)"; else "All out"
///   when the innings reached its wicket limit, else "Wicket". At most one alert.
/// - six: a batter still in of the same current innings scored exactly 6 more runs off exactly one
///   more ball, or a new feed event of type "six" arrived. Body: that event's text, else
///   "Rohit Sharma hits a six". At most one alert.
/// - fifty / hundred: a batter still in crossed 50 or 100 ("Fifty for Rohit Sharma, 52 (33)");
///   crossing both at once alerts the hundred only.
/// - innings end: an innings is closed now but was not before: a later innings began, or it
///   reached its wicket limit or overs limit, or it was declared. Body: "CSK need 165 to win"
///   after the first innings of a limited-overs match, else "End of innings".
/// Ordered wicket, six, fifty/hundred, innings end. A feed that drops innings (a correction) gives none.
public enum CricketKeyEvents {
    /// The alerts for what happened after `previous` up to `current`; [] unless both are cricket.
    public static func detect(previous: MatchSnapshot, current: MatchSnapshot) -> [KeyEvent] {
        guard case .cricket(let before) = previous.score, case .cricket(let now) = current.score,
              now.innings.count >= before.innings.count,
              zip(before.innings, now.innings).allSatisfy({ $0.team == $1.team && $0.superOver == $1.superOver })
        else { return [] }
        let names = CricketTeamNames(current)
        let newEvents = current.events.filter { event in !previous.events.contains { $0.id == event.id } }
        let sameInnings = before.innings.count == now.innings.count
        var alerts: [KeyEvent] = []

        if let index = now.innings.indices.last(where: { now.innings[$0].wickets > wickets(before, $0) }) {
            let innings = now.innings[index]
            let gone = sameInnings && index == now.innings.count - 1
                ? before.batters.filter { old in !now.batters.contains { $0.name == old.name } }
                : []
            let body = newEvents.last { $0.type == "wicket" }?.text
                ?? (gone.isEmpty ? nil : gone.map { "\($0.name) out for \($0.runs) (\($0.balls))" }.joined(separator: ", "))
                ?? (innings.wickets >= now.maxWickets(of: innings) ? "All out" : "Wicket")
            alerts.append(KeyEvent(kind: .wicket, title: CricketRender.scoreLine(innings, names), body: body))
        }

        let stayed: [(old: CricketScore.Batter, new: CricketScore.Batter)] = sameInnings
            ? now.batters.compactMap { new in before.batters.first { $0.name == new.name }.map { ($0, new) } }
            : []
        let title = now.innings.last.map { CricketRender.scoreLine($0, names) } ?? "\(current.home.short) v \(current.away.short)"
        let sixer = stayed.first { $0.new.runs - $0.old.runs == 6 && $0.new.balls - $0.old.balls == 1 }
        if let body = newEvents.last(where: { $0.type == "six" })?.text ?? sixer.map({ "\($0.new.name) hits a six" }) {
            alerts.append(KeyEvent(kind: .six, title: title, body: body))
        }

        for (old, new) in stayed {
            if old.runs < 100, new.runs >= 100 {
                alerts.append(KeyEvent(kind: .hundred, title: title, body: "Hundred for \(new.name), \(new.runs) (\(new.balls))"))
            } else if old.runs < 50, new.runs >= 50 {
                alerts.append(KeyEvent(kind: .fifty, title: title, body: "Fifty for \(new.name), \(new.runs) (\(new.balls))"))
            }
        }

        for index in now.innings.indices where closed(now, index) && !(index < before.innings.count && closed(before, index)) {
            let title = CricketRender.scoreLine(now.innings[index], names)
            alerts.append(KeyEvent(kind: .inningsEnd, title: title, body: inningsEndBody(now, index, names)))
        }
        return alerts
    }

    private static func wickets(_ score: CricketScore, _ index: Int) -> Int {
        index < score.innings.count ? score.innings[index].wickets : 0
    }

    private static func closed(_ score: CricketScore, _ index: Int) -> Bool {
        index < score.innings.count - 1 || score.isClosed(score.innings[index])
    }

    private static func inningsEndBody(_ score: CricketScore, _ index: Int, _ names: CricketTeamNames) -> String {
        let innings = score.innings[index]
        guard score.format != .test, !innings.superOver, index == 0,
              let opponent = [names.snapshot.home.id, names.snapshot.away.id].first(where: { $0 != innings.team })
        else { return "End of innings" }
        let target = score.innings.count > 1 ? score.innings[1].target ?? innings.runs + 1 : innings.runs + 1
        return "\(names[opponent]) need \(target) to win"
    }
}
