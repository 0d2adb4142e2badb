import Foundation
import MatchcastCore

/// Turns a Cricsheet JSON match (format 1.0 or 1.1) into a recording of `/matches/{id}`: a
/// `scheduled` snapshot, one snapshot per delivery, a `break` between innings, and the final
/// snapshot (`completed`, or `abandoned` for a no result).
///
/// - Teams: `info.teams[0]` is home; ids are slugs of the names, short names their initials
///   ("New Zealand" → "NZ") or, for one word, its first three letters ("England" → "ENG").
/// - Format from `info.match_type` (T20/IT20 → t20, ODI/ODM → odi, Test/MDM → test), `oversLimit`
///   from `info.overs`.
/// - Overs count legal balls only: a delivery with a `wides` or `noballs` extra is not one.
///   "retired hurt" and "retired not out" are not wickets.
/// - Targets: the innings' stated `target.runs` (D/L revisions included; `target.overs` becomes
///   that innings' `oversLimit`), else the first innings + 1 for a limited-overs chase (the first
///   super over + 1 for the second), or the runs trailed by + 1 in a fourth Test innings.
/// - Batters in with runs and balls faced (a wide is not faced), the next ball's striker marked;
///   the bowler with this innings' figures (legal balls; runs without byes, leg-byes and penalties;
///   wickets without run outs and retirements). Wickets are events.
/// - `method` and `winner` (`outcome.winner`, `eliminator` or `bowl_out`) on the final snapshot.
/// - Timing: Cricsheet gives a date only. The recording starts at 10:00 UTC that day; a delivery
///   every 40 s, 20 minutes between innings; a no result is called off 30 minutes after the last ball.
public enum CricsheetImporter {
    /// Seconds between deliveries.
    public static let deliverySeconds: Double = 40
    /// Seconds from the last ball of an innings to the first of the next.
    public static let inningsBreakSeconds: Double = 20 * 60
    /// Seconds from the last ball of a no result to its being called off.
    public static let abandonSeconds: Double = 30 * 60
    /// Wicket events kept on a snapshot, newest last.
    static let eventLimit = 10

    /// The recording of the match in `data` under the match id `id`.
    public static func recording(_ data: Data, id: String) throws(InputError) -> [RecordingLine] {
        let match = try JSON.decode(CricsheetMatch.self, from: data)
        var builder = try CricsheetRecordingBuilder(match: match, id: id)
        return try builder.build()
    }

    /// The recording of the file at `url`; the match id is `id`, else the file's name without extension.
    public static func recording(contentsOf url: URL, id: String? = nil) throws(InputError) -> [RecordingLine] {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw InputError(field: "", reason: "cannot read \(url.path): \(error.localizedDescription)")
        }
        return try recording(data, id: id ?? matchId(forFile: url))
    }

    /// `…/1144530.json` → `1144530`.
    public static func matchId(forFile url: URL) -> String {
        url.deletingPathExtension().lastPathComponent
    }
}
