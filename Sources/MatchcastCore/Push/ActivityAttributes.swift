/// The static attributes of a match activity, sent once with `start` (`attributes-type: MatchAttributes`).
///
/// `activityId` lets the app report the update token of an activity the broker started.
public struct ActivityAttributes: Sendable, Hashable, Codable {
    public static let typeName = "MatchAttributes"

    public var activityId: String
    public var matchId: String
    public var sport: Sport
    public var competition: String?
    public var homeName: String
    public var awayName: String
    public var homeShort: String
    public var awayShort: String

    public init(activityId: String, snapshot: MatchSnapshot) {
        self.activityId = activityId
        matchId = snapshot.id
        sport = snapshot.sport
        competition = snapshot.competition
        homeName = snapshot.home.name
        awayName = snapshot.away.name
        homeShort = snapshot.home.short
        awayShort = snapshot.away.short
    }
}
