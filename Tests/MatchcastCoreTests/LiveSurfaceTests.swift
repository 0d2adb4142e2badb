import Foundation
import Testing
@testable import MatchcastCore

// The platform-neutral model built from what a delivery carries (docs/formats.md, "Live surface").

@Suite("Live surface")
struct LiveSurfaceTests {
    typealias F = SurfaceFixture

    @Test func namesAndCompetitionComeFromTheAttributes() throws {
        let state = try F.state(F.t20Chase)
        let surface = try F.surface(F.t20Chase)
        #expect(surface.matchId == "ipl-2026-m41")
        #expect(surface.sport == .cricket)
        #expect(surface.title == "Mumbai Indians v Chennai Super Kings")
        #expect(surface.subtitle == "Indian Premier League · Live")
        #expect(surface.scoreLine == state.summary)
        #expect(surface.scoreLine == "CSK 87/6 (14.2) · Need 120 off 34")
        #expect(surface.status == "live")
        #expect(surface.statusText == "Live")
        #expect(surface.keyEvent == nil)
        #expect(surface.result == nil)
        #expect(surface.progress?.segments == [120, 120])
        #expect(!surface.isFinal)
        #expect(!surface.ended)
    }

    @Test func withoutAttributesTheShortNamesAndStatusStand() throws {
        let surface = try F.surface(F.t20Chase, withAttributes: false)
        #expect(surface.title == "MI v CSK")
        #expect(surface.subtitle == "Live")
        #expect(surface.sport == nil)
        // The cricket fields still say which sport it is.
        #expect(surface.progress?.segments == [120, 120])
    }

    @Test func theAttributesSportWinsOverAGivenOne() throws {
        let surface = LiveSurface(
            matchId: "x", event: .update, contentState: try F.state(F.t20Chase), attributes: F.attributes(F.t20Chase),
            sport: .football, timestamp: 0)
        #expect(surface.sport == .cricket)
    }

    @Test func finalAndEnded() throws {
        let done = F.football(.completed, period: "FT")
        let end = try F.surface(done, event: .end, keyMoment: true)
        #expect(end.isFinal)
        #expect(end.ended)
        #expect(end.result == "Arsenal won 2-1")
        #expect(end.progress?.isComplete == true)
        let unfollowed = try F.surface(F.football(period: "2H", clock: "67'"), event: .end)
        #expect(unfollowed.ended)
        #expect(!unfollowed.isFinal)
    }

    @Test func fromAnAPSPushAndFromADelivery() throws {
        var state = try F.state(F.football(period: "2H", clock: "67'"))
        state.event = "Goal! Arsenal"
        let aps = APS(
            timestamp: F.nowSeconds, event: .update, contentState: state, staleDate: F.nowSeconds + 240,
            alert: .init(title: state.summary, body: "Goal! Arsenal"))
        let kept = F.attributes(F.football(period: "2H"))
        let surface = LiveSurface(aps: aps, matchId: "football-1", attributes: kept, deepLink: "https://example.com/m/1")
        #expect(surface.event == .update)
        #expect(surface.isKeyMoment)
        #expect(surface.keyEvent == "Goal! Arsenal")
        #expect(surface.title == "Arsenal v Chelsea")
        #expect(surface.sport == .football)
        #expect(surface.timestamp == F.nowSeconds)
        #expect(surface.staleDate == F.nowSeconds + 240)
        #expect(surface.dismissalDate == nil)
        #expect(surface.progress?.position == 67)
        #expect(surface.deepLink == "https://example.com/m/1")

        let quiet = LiveSurface(aps: APS(timestamp: 1, event: .update, contentState: state), matchId: "football-1")
        #expect(!quiet.isKeyMoment)
        #expect(quiet.sport == nil)
        #expect(quiet.progress == nil)

        let delivery = Delivery(
            id: "dlv_1", matchId: "football-1", activityId: "act_1", target: PushTarget(kind: .updateToken, value: "cdcd"),
            apns: APNsHeaders(topic: "com.example.app.push-type.liveactivity", priority: 10, expiration: F.nowSeconds + 240),
            payload: try PushPayload(aps))
        #expect(LiveSurface(delivery: delivery, attributes: kept, deepLink: "https://example.com/m/1") == surface)
    }

    @Test func aStartCarriesItsOwnAttributes() throws {
        let snapshot = F.t20Chase
        let aps = APS(timestamp: F.nowSeconds, event: .start, contentState: try F.state(snapshot), staleDate: F.nowSeconds + 120,
                      alert: .init(title: "t", body: "b"), attributes: F.attributes(snapshot))
        let surface = LiveSurface(aps: aps, matchId: snapshot.id)
        #expect(surface.event == .start)
        #expect(surface.title == "Mumbai Indians v Chennai Super Kings")
        #expect(surface.sport == .cricket)
    }

    @Test func codableRoundTrip() throws {
        let surface = try F.surface(F.t20Chase, event: .start, keyMoment: true)
        let decoded = try JSON.decoder().decode(LiveSurface.self, from: JSON.encoder().encode(surface))
        #expect(decoded == surface)
    }

    @Test func theContentStateStaysAsItWas() throws {
        // The surface reads the content-state; the APNs wire format of the same state is untouched.
        let state = try F.state(F.t20Chase)
        let before = try JSON.encoder().encode(state)
        _ = try F.surface(F.t20Chase)
        #expect(try JSON.encoder().encode(state) == before)
        let keys = try #require(try JSONSerialization.jsonObject(with: before) as? [String: Any]).keys
        #expect(Set(keys) == ["status", "statusText", "home", "away", "summary", "batting", "runRate", "equation",
                              "requiredRate", "batters", "bowler"])
    }
}
