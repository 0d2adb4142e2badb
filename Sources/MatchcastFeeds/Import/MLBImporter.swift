import Foundation
import MatchcastCore

/// Turns an MLB Stats API live feed (`/api/v1.1/game/{gamePk}/feed/live`) into a recording of
/// `/matches/{id}`: a `scheduled` snapshot, one snapshot per completed play of
/// `liveData.plays.allPlays`, and the final snapshot as `MLBLiveFeed` reads the whole feed
/// (status, linescore).
///
/// - Timing from the plays themselves: `t` is seconds from the first play's `about.startTime` to
///   each play's `about.endTime`; the final snapshot comes at `metaData.timeStamp` (never earlier
///   than the last play).
/// - Per play: runs from `result.homeScore/awayScore`, inning and half from `about`, outs from
///   `count.outs`, runners from the presence of `matchup.postOnFirst/Second/Third`; scoring plays
///   are `run` events (`play-<atBatIndex>`, the latest 20), as `MLBLiveFeed` names them.
/// - `retryAfterMs` is `metaData.wait` while a half-inning is on, 30 s after its third out.
public enum MLBImporter {
    /// The recording of the live feed in `data`; the match id is `id`, else `mlb:<gamePk>` (the id the `mlb` feed
    /// serves it under).
    public static func recording(_ data: Data, id: String? = nil) throws(InputError) -> [RecordingLine] {
        let (final, waitSeconds) = try MLBLiveFeed.snapshot(from: data)
        let body = try JSON.decode(MLBPlayByPlayBody.self, from: data)
        let plays = (body.liveData?.plays?.allPlays ?? []).enumerated().filter { $0.element.about.isComplete != false }
        let matchId = id ?? MLBFeedTransport.idPrefix + final.id
        let origin = plays.first?.element.about.startTime ?? final.startsAt ?? final.updatedAt ?? Date(timeIntervalSince1970: 0)
        let liveRetry = (waitSeconds ?? 10) * 1000

        var base = final
        base.id = matchId
        base.status = .scheduled
        base.events = []
        base.score = .baseball(BaseballScore(home: 0, away: 0, inning: 1, half: .top, outs: 0, bases: [false, false, false]))
        var timeline = MatchTimeline(matchId: matchId, origin: origin)
        try timeline.append(base, at: 0, retryAfterMs: MatchTimeline.Pace.scheduled)

        var events: [MatchEvent] = []
        for (index, play) in plays {
            let field = "liveData.plays.allPlays[\(index)]"
            let score = try score(of: play, field: field)
            let at = play.about.endTime ?? play.about.startTime ?? origin
            if play.about.isScoringPlay == true {
                let atBat = play.about.atBatIndex ?? play.atBatIndex ?? index
                events.append(
                    MatchEvent(
                        id: "play-\(atBat)", type: "run", at: at,
                        text: play.result?.description ?? play.result?.event ?? "Run scores"))
            }
            var snap = base
            snap.status = .live
            snap.score = .baseball(score)
            snap.events = Array(events.suffix(MLBLiveFeed.eventLimit))
            let retry = score.outs >= 3 ? MatchTimeline.Pace.pause : liveRetry
            try timeline.append(snap, at: at.timeIntervalSince(origin), retryAfterMs: retry, updatedAt: at)
        }

        var last = final
        last.id = matchId
        let finalAt = last.updatedAt ?? origin.addingTimeInterval(timeline.t)
        let retry = last.status.isFinal ? MatchTimeline.Pace.final : liveRetry
        try timeline.append(last, at: finalAt.timeIntervalSince(origin), retryAfterMs: retry)
        return timeline.lines
    }

    private static func score(of play: MLBPlayByPlayBody.Play, field: String) throws(InputError) -> BaseballScore {
        let about = play.about
        guard (1...99).contains(about.inning) else {
            throw InputError(field: "\(field).about.inning", reason: "must be in 1...99, got \(about.inning)")
        }
        let half: BaseballScore.Half
        switch about.halfInning.lowercased() {
        case "top": half = .top
        case "bottom": half = .bottom
        default:
            throw InputError(field: "\(field).about.halfInning", reason: "unknown value '\(about.halfInning.prefix(40))'")
        }
        let outs = play.count?.outs ?? 0
        guard (0...3).contains(outs) else {
            throw InputError(field: "\(field).count.outs", reason: "must be in 0...3, got \(outs)")
        }
        let home = play.result?.homeScore ?? 0
        let away = play.result?.awayScore ?? 0
        guard home >= 0, away >= 0 else {
            throw InputError(field: "\(field).result", reason: "scores must not be negative")
        }
        let matchup = play.matchup
        return BaseballScore(
            home: home, away: away, inning: about.inning, half: half, outs: outs,
            bases: [matchup?.postOnFirst != nil, matchup?.postOnSecond != nil, matchup?.postOnThird != nil])
    }
}
