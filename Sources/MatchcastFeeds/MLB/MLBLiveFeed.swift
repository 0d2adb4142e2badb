import Foundation
import MatchcastCore

/// Converts the MLB Stats API live feed (`GET /api/v1.1/game/{gamePk}/feed/live`) into a
/// `MatchSnapshot`.
///
/// - `id` is the gamePk; `home`/`away` come from `gameData.teams` (`short` = abbreviation).
/// - `status` from `gameData.status`: a `detailedState` of Postponed or Suspended is
///   `postponed` (a suspended game resumes another day), Cancelled is `abandoned`; else
///   `abstractGameState` Preview is `scheduled`, Final is `completed`, Live is `live`, or
///   `break` while `detailedState` says the game is Delayed.
/// - `score` from `liveData.linescore`: runs, inning and half, outs, runners on base.
/// - `events`: the latest 20 scoring plays, `play-<atBatIndex>`, type `run`.
/// - `seq` = 100 × plays so far + events of the current play, so it grows with every pitch.
/// - `updatedAt` from `metaData.timeStamp` (`yyyyMMdd_HHmmss`, UTC).
///
/// Dates are cut to whole seconds, as the native body writes them, so a snapshot reads the same
/// whether it is used directly or after a trip through `MLBFeedTransport`'s JSON.
public enum MLBLiveFeed {
    /// Scoring plays kept as events, newest last.
    static let eventLimit = 20

    /// The snapshot and `metaData.wait`, the poll interval in seconds the API asks for.
    public static func snapshot(from data: Data) throws(InputError) -> (snapshot: MatchSnapshot, waitSeconds: Int?) {
        let body = try JSON.decode(MLBLiveFeedBody.self, from: data)
        guard let gamePk = body.gamePk ?? body.gameData.game?.pk else {
            throw InputError(field: "gamePk", reason: "missing")
        }
        let game = body.gameData
        var updatedAt: Date?
        if let text = body.metaData?.timeStamp { updatedAt = try timeStamp(text) }
        let snapshot = MatchSnapshot(
            id: String(gamePk),
            sport: .baseball,
            status: try status(game.status),
            startsAt: game.datetime?.dateTime.map(wholeSeconds),
            updatedAt: updatedAt,
            seq: seq(body.liveData?.plays),
            competition: "MLB",
            venue: game.venue?.name,
            home: try team(game.teams.home, field: "gameData.teams.home"),
            away: try team(game.teams.away, field: "gameData.teams.away"),
            score: .baseball(try score(body.liveData?.linescore)),
            events: try events(body.liveData?.plays))
        return (snapshot, body.metaData?.wait)
    }

    private static func status(_ status: MLBLiveFeedBody.GameData.Status) throws(InputError) -> MatchStatus {
        let detailed = status.detailedState ?? ""
        if detailed.hasPrefix("Postponed") || detailed.hasPrefix("Suspended") { return .postponed }
        if detailed.hasPrefix("Cancelled") || detailed.hasPrefix("Canceled") { return .abandoned }
        switch status.abstractGameState {
        case "Preview": return .scheduled
        case "Final": return .completed
        case "Live": return detailed.hasPrefix("Delayed") ? .break : .live
        default:
            throw InputError(
                field: "gameData.status.abstractGameState",
                reason: "unknown value '\(status.abstractGameState.prefix(40))'")
        }
    }

    private static func team(_ info: MLBLiveFeedBody.GameData.TeamInfo, field: String) throws(InputError) -> Team {
        guard let name = info.name else { throw InputError(field: field + ".name", reason: "missing") }
        return Team(id: String(info.id), name: name, short: info.abbreviation)
    }

    private static func score(_ linescore: MLBLinescore?) throws(InputError) -> BaseballScore {
        let inning = linescore?.currentInning ?? 1
        guard (1...99).contains(inning) else {
            throw InputError(field: "liveData.linescore.currentInning", reason: "must be in 1...99, got \(inning)")
        }
        let outs = linescore?.outs ?? 0
        guard (0...3).contains(outs) else {
            throw InputError(field: "liveData.linescore.outs", reason: "must be in 0...3, got \(outs)")
        }
        let home = linescore?.teams?.home?.runs ?? 0
        let away = linescore?.teams?.away?.runs ?? 0
        guard home >= 0 else { throw InputError(field: "liveData.linescore.teams.home.runs", reason: "must not be negative") }
        guard away >= 0 else { throw InputError(field: "liveData.linescore.teams.away.runs", reason: "must not be negative") }

        let half: BaseballScore.Half
        if let top = linescore?.isTopInning {
            half = top ? .top : .bottom
        } else if let named = linescore?.inningHalf {
            switch named.lowercased() {
            case "top": half = .top
            case "bottom": half = .bottom
            default: throw InputError(field: "liveData.linescore.inningHalf", reason: "unknown value '\(named.prefix(40))'")
            }
        } else {
            half = .top
        }
        let offense = linescore?.offense
        return BaseballScore(
            home: home, away: away, inning: inning, half: half, outs: outs,
            bases: [offense?.first != nil, offense?.second != nil, offense?.third != nil])
    }

    private static func seq(_ plays: MLBLiveFeedBody.Plays?) -> Int {
        let all = plays?.allPlays ?? []
        let current = min(all.last?.playEvents?.count ?? 0, 99)
        return all.count * 100 + current
    }

    private static func events(_ plays: MLBLiveFeedBody.Plays?) throws(InputError) -> [MatchEvent] {
        let all = plays?.allPlays ?? []
        let scoring = plays?.scoringPlays ?? []
        var events: [MatchEvent] = []
        for (position, index) in scoring.enumerated().suffix(eventLimit) {
            guard all.indices.contains(index) else {
                throw InputError(
                    field: "liveData.plays.scoringPlays[\(position)]",
                    reason: "index \(index) is not in allPlays (\(all.count) plays)")
            }
            let play = all[index]
            let atBat = play.about?.atBatIndex ?? play.atBatIndex ?? index
            events.append(
                MatchEvent(
                    id: "play-\(atBat)", type: "run", at: play.about?.endTime.map(wholeSeconds),
                    text: play.result?.description ?? play.result?.event ?? "Run scores"))
        }
        return events
    }

    private static func wholeSeconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down))
    }

    /// `20240701_214404` (UTC) as a date.
    static func timeStamp(_ text: String) throws(InputError) -> Date {
        let digits = Array(text.utf8)
        let invalid = InputError(field: "metaData.timeStamp", reason: "expected yyyyMMdd_HHmmss, got '\(text.prefix(40))'")
        guard digits.count == 15, digits[8] == UInt8(ascii: "_") else { throw invalid }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in digits[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(4..<6), let day = number(6..<8),
            let hour = number(9..<11), let minute = number(11..<13), let second = number(13..<15),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { throw invalid }
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let components = DateComponents(year: year, month: month, day: day, hour: hour, minute: minute, second: second)
        guard let date = calendar.date(from: components) else { throw invalid }
        return date
    }
}
