import Foundation
import Testing
@testable import MatchcastCore

// The FCM data message (docs/formats.md, "Live surface": "FCM data").

@Suite("Live surface FCM")
struct LiveSurfaceFCMTests {
    typealias F = SurfaceFixture


    @Test func chaseUpdateCarriesEveryDocumentedKey() throws {
        let state = try F.state(F.t20Chase)
        let message = try F.surface(F.t20Chase).fcmMessage(now: F.now)
        #expect(message.data == [
            "mc_v": "1",
            "mc_event": "update",
            "mc_match": "ipl-2026-m41",
            "mc_sport": "cricket",
            "mc_title": "Mumbai Indians v Chennai Super Kings",
            "mc_sub": "Indian Premier League · Live",
            "mc_score": state.summary,
            "mc_status": "live",
            "mc_status_text": "Live",
            "mc_alert": "0",
            "mc_final": "0",
            "mc_unit": "balls",
            "mc_progress": String(120 + 86),
            "mc_segments": "120,120",
            "mc_points": "120",
            "mc_link": "matchcast://match/ipl-2026-m41",
            "mc_ts": String(F.nowSeconds),
            "mc_stale": String(F.nowSeconds + 300),
        ])
        #expect(message.data.keys.allSatisfy { $0.hasPrefix("mc_") })
        #expect(!message.wasShortened)
        #expect(message.ttl == 300)
        #expect(message.collapseKey == "mc-ipl-2026-m41")
        #expect(message.byteCount == message.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count })
    }

    @Test func startUpdateAndEndDiffer() throws {
        let live = F.football(period: "2H", clock: "67'")
        let start = try F.surface(live, event: .start, keyMoment: true).fcmMessage(now: F.now)
        let update = try F.surface(live).fcmMessage(now: F.now)
        let goal = try F.surface(live, keyMoment: true).fcmMessage(now: F.now)
        let end = try F.surface(F.football(.completed, period: "FT"), event: .end, keyMoment: true).fcmMessage(now: F.now)

        #expect(start.data["mc_event"] == "start")
        #expect(update.data["mc_event"] == "update")
        #expect(end.data["mc_event"] == "end")
        #expect([start.data["mc_alert"], update.data["mc_alert"], goal.data["mc_alert"]] == ["1", "0", "1"])
        #expect(end.data["mc_final"] == "1")
        #expect(end.data["mc_result"] == "Arsenal won 2-1")
        #expect(end.data["mc_dismiss"] == String(F.nowSeconds + 900))
        #expect(end.data["mc_stale"] == nil)
        #expect(end.data["mc_progress"] == "90")
        #expect(end.ttl == 8 * 3600)
        #expect(start.ttl == 300)
        // One collapse key for every push of a match.
        #expect(Set([start.collapseKey, update.collapseKey, goal.collapseKey, end.collapseKey]).count == 1)
    }

    @Test func absentFieldsLeaveTheirKeysOut() throws {
        let surface = try F.surface(F.football(period: "PEN"), withAttributes: false, deepLink: nil)
        let data = try surface.fcmMessage(now: F.now).data
        for key in ["mc_sport", "mc_event_text", "mc_result", "mc_link", "mc_dismiss", "mc_unit", "mc_progress",
                    "mc_segments", "mc_points"] {
            #expect(data[key] == nil, "\(key)")
        }
        #expect(data["mc_sub"] == "Live")
        #expect(data["mc_title"] == "ARS v CHE")
    }

    @Test func adversarialContentFitsAndKeepsWhatMatters() throws {
        let snapshot = F.t20Chase
        var attributes = F.attributes(snapshot)
        let long = String(repeating: "Ω̃😀", count: 3000)
        attributes.homeName = long
        attributes.awayName = long
        attributes.competition = long
        let surface = LiveSurface(
            matchId: snapshot.id, event: .update, contentState: F.adversarialState(), attributes: attributes,
            isKeyMoment: true, timestamp: F.nowSeconds, staleDate: F.nowSeconds + 120,
            deepLink: "https://example.com/" + String(repeating: "x", count: 5000))
        #expect(FCMDataMessage.byteCount(of: surface.fcmData()) > FCMDataMessage.maxBytes)

        let message = try surface.fcmMessage(now: F.now)
        #expect(message.byteCount <= FCMDataMessage.maxBytes)
        #expect(message.wasShortened)
        // Identity, event and dates are never cut.
        #expect(message.data["mc_match"] == snapshot.id)
        #expect(message.data["mc_event"] == "update")
        #expect(message.data["mc_v"] == "1")
        #expect(message.data["mc_alert"] == "1")
        #expect(message.data["mc_stale"] == String(F.nowSeconds + 120))
        // The texts are there, cut on scalar boundaries and marked.
        for key in ["mc_title", "mc_score", "mc_status_text", "mc_event_text", "mc_result"] {
            let value = try #require(message.data[key], "\(key)")
            #expect(value.unicodeScalars.count <= 24, "\(key)")
            #expect(value.hasSuffix("…"), "\(key)")
        }
        #expect(message.data["mc_status"] == "live")
        // Least important first: the subtitle and the link are gone.
        #expect(message.data["mc_sub"] == nil)
        #expect(message.data["mc_link"] == nil)
    }

    @Test func aLongSubtitleIsDroppedFirstAndNothingElseChanges() throws {
        var attributes = F.attributes(F.t20Chase)
        attributes.competition = String(repeating: "Premier ", count: 600)
        var surface = LiveSurface(
            matchId: F.t20Chase.id, event: .update, contentState: try F.state(F.t20Chase), attributes: attributes,
            timestamp: F.nowSeconds, deepLink: "matchcast://m")
        surface.keyEvent = String(repeating: "k", count: 300)
        let message = try surface.fcmMessage(now: F.now)
        #expect(message.wasShortened)
        var expected = surface.fcmData()
        expected["mc_sub"] = nil
        #expect(message.data == expected)
    }

    @Test func aLongLinkGoesAfterTheSubtitleAndThePointsBeforeAnyTextIsCut() throws {
        var surface = try F.surface(F.t20Chase, deepLink: "https://example.com/" + String(repeating: "y", count: 4100))
        surface.keyEvent = String(repeating: "k", count: 300)
        let message = try surface.fcmMessage(now: F.now)
        #expect(message.data["mc_link"] == nil)
        #expect(message.data["mc_sub"] == nil)
        #expect(message.data["mc_points"] == nil)
        #expect(message.data["mc_segments"] == "120,120")
        #expect(message.data["mc_event_text"] == surface.keyEvent)
        #expect(message.data["mc_title"] == "Mumbai Indians v Chennai Super Kings")
    }

    @Test func aLongKeyEventIsCutTo80ScalarsWithoutSplittingOne() throws {
        var surface = try F.surface(F.t20Chase)
        // Two scalars a character, four bytes for the emoji: the cut may fall inside a character, never inside a scalar.
        let original = String(repeating: "🏏\u{301}", count: 1500)
        surface.keyEvent = original
        let message = try surface.fcmMessage(now: F.now)
        let cut = try #require(message.data["mc_event_text"])
        #expect(cut.unicodeScalars.count == 80)
        #expect(cut.hasSuffix("…"))
        #expect(Array(original.unicodeScalars.prefix(79)) == Array(cut.unicodeScalars.dropLast()))
        #expect(message.data["mc_title"] == "Mumbai Indians v Chennai Super Kings")
    }

    @Test func aMatchIdThatCannotFitIsAnError() throws {
        var surface = try F.surface(F.t20Chase)
        surface.matchId = String(repeating: "m", count: 5000)
        let error = #expect(throws: SurfaceTooLarge.self) { try surface.fcmMessage(now: F.now) }
        #expect(error?.format == .fcm)
        #expect(error?.bytes ?? 0 > FCMDataMessage.maxBytes)
        #expect(error?.limit == 4096)
    }

    @Test func collapseKeyIsTheMatchsTagWhateverTheId() throws {
        var keys: Set<String> = []
        for id in ["ipl-2026-m41", "espn:401547439", "ünïcödé/ids?&=", ""] {
            var surface = try F.surface(F.t20Chase)
            surface.matchId = id
            let key = try surface.fcmMessage(now: F.now).collapseKey
            #expect(key == "mc-" + id)
            #expect(key == surface.tag)
            keys.insert(key)
        }
        #expect(keys.count == 4, "one key per match")
    }
}
