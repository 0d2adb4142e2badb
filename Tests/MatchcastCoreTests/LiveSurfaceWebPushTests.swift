import Foundation
import Testing
@testable import MatchcastCore

// The Web Push body and headers (docs/formats.md, "Live surface": "Web Push").

@Suite("Live surface Web Push")
struct LiveSurfaceWebPushTests {
    typealias F = SurfaceFixture

    static func object(_ message: WebPushPayload) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(message.body)) as? [String: Any])
    }

    @Test func bodyDecodesWithTheDocumentedKeys() throws {
        let surface = try F.surface(F.t20Chase)
        let message = try surface.webPushPayload(now: F.now)
        let body = try Self.object(message)
        #expect(Set(body.keys) == ["title", "body", "tag", "timestamp", "renotify", "requireInteraction", "silent", "data"])
        #expect(body["title"] as? String == "Mumbai Indians v Chennai Super Kings")
        #expect(body["body"] as? String == "CSK 87/6 (14.2) · Need 120 off 34")
        #expect(body["tag"] as? String == "mc-ipl-2026-m41")
        #expect(body["timestamp"] as? Int == F.nowSeconds * 1000)

        let data = try #require(body["data"] as? [String: Any])
        #expect(Set(data.keys) == ["v", "match", "event", "sport", "subtitle", "score", "status", "statusText", "alert",
                                   "final", "progress", "link", "ts", "stale"])
        #expect(data["v"] as? Int == 1)
        #expect(data["match"] as? String == "ipl-2026-m41")
        #expect(data["event"] as? String == "update")
        #expect(data["sport"] as? String == "cricket")
        #expect(data["link"] as? String == "matchcast://match/ipl-2026-m41")
        #expect(data["stale"] as? Int == F.nowSeconds + 300)
        let progress = try #require(data["progress"] as? [String: Any])
        #expect(progress["unit"] as? String == "balls")
        #expect(progress["segments"] as? [Int] == [120, 120])
        #expect(progress["position"] as? Int == 206)
        #expect(progress["points"] as? [Int] == [120])

        #expect(message.ttl == 300)
        #expect(message.urgency == .normal)
        #expect(!message.wasShortened)
    }

    @Test func bytesAreDeterministicWithSortedKeys() throws {
        let surface = try F.surface(F.t20Chase, event: .start, keyMoment: true)
        let first = surface.webPushBody()
        #expect(first == surface.webPushBody())
        let text = String(decoding: first, as: UTF8.self)
        #expect(text.hasPrefix(#"{"body":"#))
        #expect(text.contains(#""data":{"alert":true,"event":"start","#))
        #expect(!text.contains(#"\/"#))
    }

    @Test func startUpdateKeyMomentAndEndDiffer() throws {
        let goalState = F.football(period: "2H", clock: "67'")
        var surface = try F.surface(goalState)
        surface.keyEvent = "Goal! Arsenal"

        let update = try Self.object(surface.webPushPayload(now: F.now))
        #expect(update["renotify"] as? Bool == false)
        #expect(update["silent"] as? Bool == true)
        #expect(update["requireInteraction"] as? Bool == true)
        #expect(update["body"] as? String == "ARS 2-1 CHE · 2H 67'")
        #expect(try surface.webPushPayload(now: F.now).urgency == .normal)

        surface.isKeyMoment = true
        let goal = try Self.object(surface.webPushPayload(now: F.now))
        #expect(goal["renotify"] as? Bool == true)
        #expect(goal["silent"] as? Bool == false)
        #expect(goal["body"] as? String == "ARS 2-1 CHE · 2H 67'\nGoal! Arsenal")
        #expect(try surface.webPushPayload(now: F.now).urgency == .high)

        let start = try F.surface(goalState, event: .start)
        let startBody = try Self.object(start.webPushPayload(now: F.now))
        #expect(startBody["renotify"] as? Bool == true)
        #expect(try start.webPushPayload(now: F.now).urgency == .high)

        let end = try F.surface(F.football(.completed, period: "FT"), event: .end, keyMoment: true)
        let endMessage = try end.webPushPayload(now: F.now)
        let endBody = try Self.object(endMessage)
        #expect(endBody["requireInteraction"] as? Bool == false)
        #expect(endBody["body"] as? String == "ARS 2-1 CHE\nArsenal won 2-1")
        let endData = try #require(endBody["data"] as? [String: Any])
        #expect(endData["final"] as? Bool == true)
        #expect(endData["event"] as? String == "end")
        #expect(endData["dismiss"] as? Int == F.nowSeconds + 900)
        #expect(endMessage.urgency == .high)
        #expect(endMessage.ttl == 8 * 3600)
        #expect(endBody["tag"] as? String == startBody["tag"] as? String)

        // An end that is no result (the user stopped following): quiet.
        let unfollow = try Self.object(F.surface(goalState, event: .end).webPushPayload(now: F.now))
        #expect(unfollow["renotify"] as? Bool == false)
        #expect(unfollow["requireInteraction"] as? Bool == false)
    }

    @Test func adversarialContentFitsThePlaintextCap() throws {
        #expect(WebPushPayload.maxPlaintextBytes == 3993)
        var attributes = F.attributes(F.t20Chase)
        attributes.competition = String(repeating: "\u{1}\"", count: 4000)
        let surface = LiveSurface(
            matchId: "ipl-2026-m41", event: .update, contentState: F.adversarialState(), attributes: attributes,
            timestamp: F.nowSeconds, staleDate: F.nowSeconds + 60, deepLink: String(repeating: "/", count: 3000))
        #expect(surface.webPushBody().count > WebPushPayload.maxPlaintextBytes)
        let message = try surface.webPushPayload(now: F.now)
        #expect(message.body.count <= WebPushPayload.maxPlaintextBytes)
        #expect(message.wasShortened)
        let body = try Self.object(message)
        let data = try #require(body["data"] as? [String: Any])
        #expect(data["match"] as? String == "ipl-2026-m41")
        #expect(data["subtitle"] == nil)
        #expect(data["link"] == nil)
        #expect((body["title"] as? String)?.unicodeScalars.count ?? 99 <= 24)
    }

    @Test func aMatchIdThatCannotFitIsAnError() throws {
        var surface = try F.surface(F.t20Chase)
        surface.matchId = String(repeating: "m", count: 4000)
        #expect(throws: SurfaceTooLarge(format: .webPush, bytes: surface.shortened(step: 6).webPushBody().count, limit: 3993)) {
            try surface.webPushPayload(now: F.now)
        }
    }

    @Test func hugeTimestampsDoNotTrap() throws {
        var surface = try F.surface(F.t20Chase)
        surface.timestamp = Int.max
        surface.staleDate = Int.min
        let message = try surface.webPushPayload(now: F.now)
        #expect(message.ttl == 0)
        #expect(try Self.object(message)["timestamp"] as? Int == 0)
    }
}
