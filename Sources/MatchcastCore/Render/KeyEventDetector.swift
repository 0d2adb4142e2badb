/// Finds the key moments between two renderings of the same match (alert, priority 10).
///
/// Match start and end for every sport; then per sport: cricket wickets, sixes, fifties,
/// hundreds, innings ends; goals (football, hockey), scores (American football), runs
/// (baseball); tennis breaks of serve, sets and the match. Basketball scores too often
/// for an alert per basket: only start and end.
public enum KeyEventDetector {
    public static func detect(previous: RenderedMatch?, current: RenderedMatch) -> [KeyEvent] {
        let now = current.snapshot
        let title = current.contentState.summary
        guard let previous else {
            return now.status.isInProgress ? [KeyEvent(kind: .matchStart, title: title, body: startBody(now))] : []
        }
        let before = previous.snapshot
        var events: [KeyEvent] = []
        if !before.status.isInProgress && !before.status.isFinal && now.status.isInProgress {
            events.append(KeyEvent(kind: .matchStart, title: title, body: startBody(now)))
        }
        switch (before.score, now.score) {
        case (.cricket, .cricket):
            events += CricketKeyEvents.detect(previous: before, current: now)
        case (.teamTotals(let a), .teamTotals(let b)):
            events += totals(now, since: before, from: (a.home, a.away), to: (b.home, b.away), title: title)
        case (.baseball(let a), .baseball(let b)):
            events += totals(now, since: before, from: (a.home, a.away), to: (b.home, b.away), title: title)
        case (.tennis, .tennis):
            if let a = previous.tennis, let b = current.tennis {
                events += tennis(now, from: a, to: b, title: title)
            }
        default:
            break
        }
        if !before.status.isFinal && now.status.isFinal && !events.contains(where: { $0.kind == .matchWon }) {
            events.append(KeyEvent(kind: .matchEnd, title: title, body: current.contentState.result ?? "Final"))
        }
        return events
    }

    private static func startBody(_ snapshot: MatchSnapshot) -> String {
        "\(snapshot.home.name) v \(snapshot.away.name) has started"
    }

    private static func totals(
        _ snapshot: MatchSnapshot, since previous: MatchSnapshot, from: (Int, Int), to: (Int, Int), title: String
    ) -> [KeyEvent] {
        let kind: KeyEvent.Kind
        switch snapshot.sport {
        case .football, .hockey: kind = .goal
        case .baseball: kind = .run
        case .americanFootball: kind = .score
        default: return []
        }
        var events: [KeyEvent] = []
        for side in Side.allCases {
            let gained = side == .home ? to.0 - from.0 : to.1 - from.1
            guard gained > 0 else { continue }
            let team = snapshot.team(side).name
            let what: String
            switch kind {
            case .goal: what = gained == 1 ? "Goal! \(team)" : "\(gained) goals for \(team)"
            case .run: what = gained == 1 ? "\(team) score" : "\(team) score \(gained)"
            default: what = "\(team) score"
            }
            // The feed's own words for a single new score ("GOAL! Kai Havertz 25'") beat ours.
            let fresh = snapshot.events.last(where: { event in !previous.events.contains { $0.id == event.id } })
            let body = gained == 1 && from.0 + from.1 + 1 == to.0 + to.1 ? fresh?.text ?? what : what
            events.append(KeyEvent(kind: kind, title: title, body: body))
        }
        return events
    }

    private static func tennis(_ snapshot: MatchSnapshot, from a: TennisState, to b: TennisState, title: String) -> [KeyEvent] {
        var events: [KeyEvent] = []
        for side in Side.allCases where b.breaks[side == .home ? 0 : 1] > a.breaks[side == .home ? 0 : 1] {
            events.append(KeyEvent(kind: .breakOfServe, title: title, body: "Break of serve: \(snapshot.team(side).name)"))
        }
        for side in Side.allCases where b.setsWon[side == .home ? 0 : 1] > a.setsWon[side == .home ? 0 : 1] {
            if b.winner == side {
                events.append(KeyEvent(kind: .matchWon, title: title, body: "Game, set and match \(snapshot.team(side).name)"))
            } else {
                events.append(KeyEvent(kind: .setWon, title: title, body: "Set \(snapshot.team(side).name)"))
            }
        }
        return events
    }
}
