/// What any platform's live notification of a match shows: an Android Live Update, a Web Push notification.
///
/// Built from what a delivery already carries (the content-state, the event, the dates of the push and, on a
/// `start`, the activity's attributes), so a sink for another platform needs nothing the APNs path does not
/// have. Every display string is the renderer's, unchanged; only `progress` is derived (`Progress`). The
/// renderings for FCM and Web Push are pure functions of this value (docs/formats.md, "Live surface").
public struct LiveSurface: Sendable, Hashable, Codable {
    public var matchId: String
    /// `start`, `update` or `end`, as the ActivityKit push of the same update.
    public var event: ActivityEvent
    /// Known from the attributes of a `start`, or from whoever kept them; nil when neither is at hand.
    public var sport: Sport?
    /// "Mumbai Indians v Chennai Super Kings"; the short names ("MI v CSK") when the attributes are absent.
    public var title: String
    /// The competition and the status text ("Indian Premier League · Live"); nil when both are empty.
    public var subtitle: String?
    /// The content-state's `summary`: "MI 87/6 (14.2) · Need 78 off 34".
    public var scoreLine: String
    /// Raw `MatchStatus` value ("live", "completed"), for styling.
    public var status: String
    /// "Live", "Innings break", "Final".
    public var statusText: String
    /// The latest key event, as the content-state carries it ("Rohit Sharma out for 45 (32)").
    public var keyEvent: String?
    /// The result line once the match is final ("MI won by 27 runs").
    public var result: String?
    /// Whether this push should draw attention: it carried an alert (a key event, a start, the final result).
    public var isKeyMoment: Bool
    /// How far the match has gone, when that can be told with confidence.
    public var progress: Progress?
    /// Where a tap should take the user; the app opens the match by `matchId` without it.
    public var deepLink: String?
    /// Unix seconds of the update (the push's `timestamp`); grows per match.
    public var timestamp: Int
    /// Unix seconds after which the content should be shown as out of date.
    public var staleDate: Int?
    /// Unix seconds at which an ended match's notification should go away.
    public var dismissalDate: Int?

    /// The match is over (completed or abandoned): no further change is expected.
    public var isFinal: Bool { MatchStatus(rawValue: status)?.isFinal ?? false }

    /// This is the last push for the match: the notification stops being ongoing.
    public var ended: Bool { event == .end }

    /// A surface from a content-state and what the push around it says.
    ///
    /// - Parameters:
    ///   - attributes: the activity's attributes, when known (only a `start` carries them); they give the full
    ///     names, the competition and the sport.
    ///   - sport: the sport when the attributes are absent; the attributes' sport wins when both are given.
    ///   - isKeyMoment: whether the push carried an alert.
    public init(
        matchId: String, event: ActivityEvent, contentState: ContentState, attributes: ActivityAttributes? = nil,
        sport: Sport? = nil, isKeyMoment: Bool = false, timestamp: Int, staleDate: Int? = nil,
        dismissalDate: Int? = nil, deepLink: String? = nil
    ) {
        let sport = attributes?.sport ?? sport
        self.matchId = matchId
        self.event = event
        self.sport = sport
        if let attributes {
            title = "\(attributes.homeName) v \(attributes.awayName)"
        } else {
            title = "\(contentState.home.name) v \(contentState.away.name)"
        }
        let parts = [attributes?.competition, contentState.statusText].compactMap { $0 }.filter { !$0.isEmpty }
        subtitle = parts.isEmpty ? nil : parts.joined(separator: " · ")
        scoreLine = contentState.summary
        status = contentState.status
        statusText = contentState.statusText
        keyEvent = contentState.event
        result = contentState.result
        self.isKeyMoment = isKeyMoment
        progress = Progress(contentState: contentState, sport: sport)
        self.deepLink = deepLink
        self.timestamp = timestamp
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
    }
}
