import Foundation
import MatchcastCore

/// One ESPN site-API event as the scoreboard, the team schedule and the summary's `header` give
/// it: the parts `ESPNEventConverter` reads. Everything ESPN may leave out is optional, unknown
/// keys are ignored, and the converter names the field when something it needs is missing.
struct ESPNEventBody: Decodable {
    struct League: Decodable {
        var name: String?
        var abbreviation: String?
        var slug: String?
        var uid: String?
    }

    struct Status: Decodable {
        struct Kind: Decodable {
            /// `STATUS_IN_PROGRESS`, `STATUS_HALFTIME`, `STATUS_FULL_TIME`, `STATUS_POSTPONED`, …
            var name: String?
            /// `pre`, `in` or `post`.
            var state: String?
            var completed: Bool?
            /// `Bottom 5th`, `8:36 - 3rd Quarter`, `FT`.
            var detail: String?
            /// `Bot 5th`, `8:36 - 3rd`, `Final/OT`.
            var shortDetail: String?
        }

        /// `67'`, `90'+8'`, `8:36`; baseball always says `0:00`.
        var displayClock: String?
        /// Half, quarter, period, inning or set, by sport; 0 or absent before the start.
        var period: Int?
        var type: Kind?
    }

    struct Venue: Decodable {
        var fullName: String?
        var displayName: String?
    }

    struct TeamInfo: Decodable {
        var id: String?
        var displayName: String?
        var name: String?
        var abbreviation: String?
    }

    struct Competitor: Decodable {
        var id: String?
        var homeAway: String?
        var team: TeamInfo?
        /// A string (`"2"`) on the scoreboard and the summary, an object on the team schedule.
        var score: ESPNScoreValue?
    }

    /// Baseball's live situation; football's has down and distance, which Matchcast does not show.
    struct Situation: Decodable {
        var outs: Int?
        var onFirst: Bool?
        var onSecond: Bool?
        var onThird: Bool?
    }

    struct Regulation: Decodable {
        var periods: Int?
    }

    struct Format: Decodable {
        var regulation: Regulation?
    }

    struct Competition: Decodable {
        var id: String?
        var date: String?
        var status: Status?
        var venue: Venue?
        var competitors: [Competitor]?
        var situation: Situation?
        var format: Format?
        /// Soccer's goals and cards on the scoreboard.
        var details: [ESPNPlayBody]?
    }

    var id: String?
    var date: String?
    var status: Status?
    var venue: Venue?
    /// Present on team-schedule events and the summary's header.
    var league: League?
    var competitions: [Competition]?
}

/// A competitor's score: `"2"`, `2`, or `{"value": 2.0, "displayValue": "2"}`.
enum ESPNScoreValue: Decodable {
    case text(String)
    case number(Double)

    private enum CodingKeys: String, CodingKey { case value, displayValue }

    init(from decoder: any Decoder) throws {
        if let single = try? decoder.singleValueContainer() {
            if let text = try? single.decode(String.self) {
                self = .text(text)
                return
            }
            if let number = try? single.decode(Double.self) {
                self = .number(number)
                return
            }
        }
        let c = try decoder.container(keyedBy: CodingKeys.self)
        if let number = try c.decodeIfPresent(Double.self, forKey: .value) {
            self = .number(number)
        } else if let text = try c.decodeIfPresent(String.self, forKey: .displayValue) {
            self = .text(text)
        } else {
            throw DecodingError.keyNotFound(
                CodingKeys.value, .init(codingPath: c.codingPath, debugDescription: "a score object needs value or displayValue"))
        }
    }

    /// The score as a count, or nil when it is not a whole number from 0 to 1,000,000.
    var count: Int? {
        switch self {
        case .text(let text):
            guard let value = Int(text.trimmingCharacters(in: .whitespaces)), (0...1_000_000).contains(value) else { return nil }
            return value
        case .number(let number):
            guard number.isFinite, number >= 0, number <= 1_000_000, number == number.rounded() else { return nil }
            return Int(number)
        }
    }

    var text: String {
        switch self {
        case .text(let text): text
        case .number(let number): String(number)
        }
    }
}

/// A soccer scoreboard `details[]` entry, or a summary `keyEvents[]` / `scoringPlays[]` entry.
struct ESPNPlayBody: Decodable {
    struct Kind: Decodable {
        var id: String?
        /// `Goal`, `Goal - Header`, `Yellow Card`, `Red Card`, `Substitution`, …
        var text: String?
        /// Slug on summaries: `goal`, `yellow-card`, `own-goal`.
        var type: String?
    }

    struct Clock: Decodable {
        var value: Double?
        var displayValue: String?
    }

    struct Period: Decodable {
        var number: Int?
    }

    struct TeamRef: Decodable {
        var id: String?
        var abbreviation: String?
        var displayName: String?
    }

    struct Athlete: Decodable {
        var displayName: String?
        var shortName: String?
    }

    struct Participant: Decodable {
        var athlete: Athlete?
    }

    /// Only summaries give ids.
    var id: String?
    var type: Kind?
    var text: String?
    var shortText: String?
    var period: Period?
    var clock: Clock?
    var team: TeamRef?
    var scoringPlay: Bool?
    var redCard: Bool?
    var yellowCard: Bool?
    var ownGoal: Bool?
    var penaltyKick: Bool?
    var shootout: Bool?
    /// Scoreboard details name players here…
    var athletesInvolved: [Athlete]?
    /// …summaries here.
    var participants: [Participant]?
    /// When it happened, on summaries.
    var wallclock: String?
}

/// A scoreboard (`/scoreboard`) or team schedule (`/teams/{team}/schedule`): both list `events`.
/// Each event is decoded on its own, so one malformed event never hides the others.
struct ESPNScoreboardBody: Decodable {
    var leagues: [ESPNEventBody.League]?
    var events: [ESPNLenient<ESPNEventBody>]
}

/// A summary (`/summary?event={id}`): the event in `header`, plays in `keyEvents` (soccer) or
/// `scoringPlays` (other sports), the venue in `gameInfo`.
struct ESPNSummaryBody: Decodable {
    struct GameInfo: Decodable {
        var venue: ESPNEventBody.Venue?
    }

    var header: ESPNEventBody
    var keyEvents: [ESPNPlayBody]?
    var scoringPlays: [ESPNPlayBody]?
    var gameInfo: GameInfo?
}

/// A list element that decodes to a value or to the field that stopped it (the decoder's coding
/// path is absolute, so the error already names `events[i]…`).
struct ESPNLenient<Value: Decodable>: Decodable {
    let result: Result<Value, InputError>

    init(from decoder: any Decoder) throws {
        do {
            result = .success(try Value(from: decoder))
        } catch {
            result = .failure(InputError(error))
        }
    }
}
