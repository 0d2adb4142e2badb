import Foundation
import MatchcastCore

extension FCMFixture {
    /// A football match's pushes as the broker makes them, rendered by the real `MatchRenderer`: a `start` carrying
    /// the attributes, a routine update, a goal (a key moment, with an alert), and the final `end`.
    public struct FootballMatch: Sendable {
        public let id: String
        /// Unix seconds of the pushes; stale dates are 300 s later, the dismissal 900 s after the end.
        public let timestamp: Int
        public let start: Delivery
        public let update: Delivery
        public let goal: Delivery
        public let end: Delivery

        /// The four, in order.
        public var deliveries: [Delivery] { [start, update, goal, end] }

        /// - Parameter timestamp: when the pushes were made (the wall clock of the test).
        public init(id: String = "epl-2026-ars-che", timestamp: Int) {
            self.id = id
            self.timestamp = timestamp
            let arsenal = Team(id: "ars", name: "Arsenal", short: "ARS")
            let chelsea = Team(id: "che", name: "Chelsea", short: "CHE")
            func snapshot(_ status: MatchStatus, _ home: Int, _ away: Int, _ period: String, _ clock: String?) -> MatchSnapshot {
                MatchSnapshot(
                    id: id, sport: .football, status: status, competition: "Premier League", home: arsenal, away: chelsea,
                    score: .teamTotals(TeamScore(home: home, away: away, period: period, clock: clock)))
            }
            func state(_ snapshot: MatchSnapshot) -> ContentState { try! MatchRenderer.render(snapshot).contentState }
            let kickOff = snapshot(.live, 0, 0, "1H", "1'")
            var goalState = state(snapshot(.live, 1, 0, "2H", "67'"))
            goalState.event = "Goal: Saka 67'"
            var finalState = state(snapshot(.completed, 1, 0, "FT", nil))
            finalState.result = "Arsenal won 1-0"

            func delivery(_ n: Int, _ kind: PushTarget.Kind, _ aps: APS) -> Delivery {
                Delivery(
                    id: "dlv_\(id)_\(n)", matchId: id, activityId: "act_\(id)",
                    target: PushTarget(kind: kind, value: String(repeating: "ab", count: 32)),
                    apns: APNsHeaders(topic: "com.example.matchcast.push-type.liveactivity", priority: aps.alert == nil ? 5 : 10,
                                      expiration: timestamp + 3600),
                    payload: try! PushPayload(aps))
            }
            start = delivery(0, .pushToStartToken, APS(
                timestamp: timestamp, event: .start, contentState: state(kickOff), staleDate: timestamp + 300,
                alert: APS.Alert(title: "Arsenal v Chelsea", body: "Kick-off"),
                attributes: ActivityAttributes(activityId: "act_\(id)", snapshot: kickOff)))
            update = delivery(1, .updateToken, APS(
                timestamp: timestamp + 1, event: .update, contentState: state(snapshot(.live, 0, 0, "1H", "23'")),
                staleDate: timestamp + 300))
            goal = delivery(2, .updateToken, APS(
                timestamp: timestamp + 2, event: .update, contentState: goalState, staleDate: timestamp + 300,
                alert: APS.Alert(title: "Goal", body: "Saka 67'")))
            end = delivery(3, .updateToken, APS(
                timestamp: timestamp + 3, event: .end, contentState: finalState, dismissalDate: timestamp + 900,
                alert: APS.Alert(title: "Full time", body: "Arsenal won 1-0")))
        }
    }

    /// `count` updates of match `matchId`, timestamps `timestamp`, `timestamp + 1`, …, each its own payload.
    public static func updates(_ count: Int, matchId: String, timestamp: Int) -> [Delivery] {
        (0..<count).map { index in
            let state = ContentState(
                status: "live", statusText: "Live", home: .init(name: "ARS", score: "\(index)"), away: .init(name: "CHE", score: "0"),
                summary: "ARS \(index) - 0 CHE")
            return Delivery(
                id: "dlv_\(matchId)_\(String(format: "%04d", index))", matchId: matchId, activityId: "act_\(matchId)",
                target: PushTarget(kind: .updateToken, value: String(repeating: "cd", count: 32)),
                apns: APNsHeaders(topic: "com.example.matchcast.push-type.liveactivity", priority: 5, expiration: timestamp + 3600),
                payload: try! PushPayload(APS(timestamp: timestamp + index, event: .update, contentState: state, staleDate: timestamp + 300)))
        }
    }
}
