import Foundation
import Testing
@testable import MatchcastCore

// The APNs body: exact keys, the 4096-byte limit and the documented shortening rule.

private enum PayloadFixture {
    static let mi = Team(id: "mi", name: "Mumbai Indians", short: "MI")
    static let csk = Team(id: "csk", name: "Chennai Super Kings", short: "CSK")

    static func snapshot(home: Team = mi, away: Team = csk, competition: String? = "IPL 2026") -> MatchSnapshot {
        MatchSnapshot(
            id: "ipl-2026-m41", sport: .cricket, status: .live, competition: competition, home: home, away: away,
            score: .cricket(CricketScore(
                format: .t20, oversLimit: 20,
                innings: [.init(team: "csk", runs: 164, wickets: 7, balls: 120), .init(team: home.id, runs: 87, wickets: 6, balls: 86, target: 165)],
                batters: [.init(name: "Rohit Sharma", runs: 45, balls: 32, onStrike: true), .init(name: "Tilak Varma", runs: 12, balls: 9)],
                bowler: .init(name: "Jasprit Bumrah", balls: 20, runs: 18, wickets: 2))))
    }

    static func content(_ snapshot: MatchSnapshot = snapshot()) -> ContentState {
        try! MatchRenderer.render(snapshot).contentState
    }

    static func start(_ snapshot: MatchSnapshot = snapshot(), event: String? = nil) -> APS {
        var content = content(snapshot)
        content.event = event
        return APS(timestamp: 1_776_784_329, event: .start, contentState: content, staleDate: 1_776_784_629,
                   alert: .init(title: content.summary, body: event ?? "\(snapshot.home.name) v \(snapshot.away.name)"),
                   attributes: ActivityAttributes(activityId: "act_01", snapshot: snapshot))
    }

    static func update(_ content: ContentState, alert: APS.Alert? = nil) -> APS {
        APS(timestamp: 1_776_784_329, event: .update, contentState: content, staleDate: 1_776_784_629, alert: alert)
    }

    static func object(_ payload: PushPayload) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(payload.bytes)) as? [String: Any])
    }

    static func aps(_ payload: PushPayload) throws -> [String: Any] {
        try #require(try object(payload)["aps"] as? [String: Any])
    }

    static func big(_ unit: String = "x", _ bytes: Int = 10_240) -> String { String(repeating: unit, count: bytes / unit.utf8.count) }
}

@Suite("Push payload")
struct PushPayloadTests {
    fileprivate typealias F = PayloadFixture

    @Test func startUsesApplesKeys() throws {
        let payload = try PushPayload(F.start())
        #expect(!payload.wasShortened)
        #expect(payload.bytes.count <= PushPayload.maxBytes)
        let object = try F.object(payload)
        #expect(Array(object.keys) == ["aps"])
        let aps = try F.aps(payload)
        #expect(Set(aps.keys) == ["timestamp", "event", "content-state", "stale-date", "alert", "attributes-type", "attributes"])
        #expect(aps["event"] as? String == "start")
        #expect(aps["attributes-type"] as? String == "MatchAttributes")
        #expect(aps["timestamp"] as? Int == 1_776_784_329)
        #expect(aps["stale-date"] as? Int == 1_776_784_629)
        let attributes = try #require(aps["attributes"] as? [String: Any])
        #expect(attributes["activityId"] as? String == "act_01")
        let alert = try #require(aps["alert"] as? [String: Any])
        #expect(alert["title"] as? String == "MI 87/6 (14.2) · Need 78 off 34")
        #expect(alert["body"] as? String == "Mumbai Indians v Chennai Super Kings")
        let content = try #require(aps["content-state"] as? [String: Any])
        #expect(content["runRate"] as? String == "RR 6.07")
        #expect(content["batters"] as? [String] == ["Rohit Sharma* 45 (32)", "Tilak Varma 12 (9)"])
        // Bytes are the canonical encoding: sorted keys, so the same aps always gives the same bytes.
        #expect(String(decoding: payload.bytes, as: UTF8.self).hasPrefix(#"{"aps":{"alert":{"body":"#))
        #expect(try PushPayload(F.start()).bytes == payload.bytes)
    }

    @Test func endUsesDismissalDateAndNoStartKeys() throws {
        let aps = APS(timestamp: 100, event: .end, contentState: F.content(), dismissalDate: 1000)
        let object = try F.aps(try PushPayload(aps))
        #expect(Set(object.keys) == ["timestamp", "event", "content-state", "dismissal-date"])
        #expect(object["dismissal-date"] as? Int == 1000)
        #expect(object["event"] as? String == "end")
    }

    @Test func payloadDecodesBackToTheSameAPS() throws {
        let aps = F.start(event: "Rohit Sharma hits a six")
        let payload = try PushPayload(aps)
        struct Body: Decodable { let aps: APS }
        #expect(try JSONDecoder().decode(Body.self, from: Data(payload.bytes)).aps == aps)
        #expect(payload.aps == aps)
    }

    @Test func hugeTeamNameIsShortenedByStepFour() throws {
        let name = F.big("Mumbai ")
        let snapshot = F.snapshot(home: Team(id: "mi", name: name, short: "MI"))
        let payload = try PushPayload(F.start(snapshot))
        #expect(payload.wasShortened)
        #expect(payload.bytes.count <= PushPayload.maxBytes)
        let aps = try F.aps(payload)  // still valid JSON
        let attributes = try #require(aps["attributes"] as? [String: Any])
        let homeName = try #require(attributes["homeName"] as? String)
        #expect(homeName.count == 24)
        #expect(homeName.hasSuffix("…"))
        #expect(name.hasPrefix(homeName.dropLast()))
        #expect(attributes["awayName"] as? String == "Chennai Super Kings")
        #expect(attributes["homeShort"] as? String == "MI")
        // Step 2 cut the alert body to 80 characters; step 1 dropped the batters.
        let alert = try #require(aps["alert"] as? [String: Any])
        #expect((alert["body"] as? String)?.count == 80)
        #expect(payload.aps.contentState.batters == nil)
    }

    @Test func hugeEventTextStopsAtStepTwo() throws {
        let text = F.big("Dhoni c Rohit b Bumrah 12 (9) ")
        let payload = try PushPayload(F.start(event: text))
        #expect(payload.wasShortened)
        #expect(payload.bytes.count <= PushPayload.maxBytes)
        let event = try #require(payload.aps.contentState.event)
        #expect(event.count == 80)
        #expect(event == String(text.prefix(79)) + "…")
        #expect(payload.aps.alert?.body == event)
        // Steps 3 and 4 were not needed: everything else is whole.
        let original = F.content()
        #expect(payload.aps.contentState.summary == original.summary)
        #expect(payload.aps.contentState.equation == original.equation)
        #expect(payload.aps.alert?.title == original.summary)
        #expect(payload.aps.attributes?.homeName == "Mumbai Indians")
        // Step 1 always comes first.
        #expect(payload.aps.contentState.batters == nil)
        _ = try F.object(payload)
    }

    @Test func oversizedBattersAreDroppedFirstAndNothingElseIsCut() throws {
        var content = F.content()
        content.batters = (0..<300).map { "Batter number \($0) 100 (50)" }
        content.event = String(repeating: "e", count: 200)
        let payload = try PushPayload(F.update(content))
        #expect(payload.wasShortened)
        #expect(payload.aps.contentState.batters == nil)
        #expect(payload.aps.contentState.event?.count == 200)
        #expect(payload.aps.contentState.summary == content.summary)
    }

    @Test func hugeContentStringsAreCutToTwentyFourCharactersByStepThree() throws {
        var content = F.content()
        content.summary = F.big("S", 3000)
        content.equation = F.big("Q", 3000)
        content.result = F.big("R", 3000)
        let payload = try PushPayload(F.update(content, alert: .init(title: F.big("T", 2000), body: "short")))
        #expect(payload.wasShortened)
        #expect(payload.bytes.count <= PushPayload.maxBytes)
        #expect(payload.aps.contentState.summary == String(repeating: "S", count: 23) + "…")
        #expect(payload.aps.contentState.equation == String(repeating: "Q", count: 23) + "…")
        #expect(payload.aps.contentState.result == String(repeating: "R", count: 23) + "…")
        #expect(payload.aps.alert?.title == String(repeating: "T", count: 23) + "…")
        #expect(payload.aps.alert?.body == "short")
        #expect(payload.aps.contentState.runRate == "RR 6.07")
    }

    @Test func cutKeepsShortTextAndEndsLongTextWithAnEllipsis() {
        #expect(PushPayload.cut("Mumbai Indians", 24) == "Mumbai Indians")
        #expect(PushPayload.cut(String(repeating: "a", count: 24), 24) == String(repeating: "a", count: 24))
        #expect(PushPayload.cut(String(repeating: "a", count: 25), 24) == String(repeating: "a", count: 23) + "…")
        #expect(PushPayload.cut("🏏🏏🏏🏏", 3) == "🏏🏏…")
    }

    @Test func payloadAtTheLimitIsNotShortened() throws {
        var content = F.content()
        content.batters = nil
        let base = PushPayload.encode(F.update(content)).count
        content.equation = (content.equation ?? "") + String(repeating: "x", count: PushPayload.maxBytes - base)
        let exact = try PushPayload(F.update(content))
        #expect(exact.bytes.count == PushPayload.maxBytes)
        #expect(!exact.wasShortened)
        content.equation! += "x"
        let over = try PushPayload(F.update(content))
        #expect(over.wasShortened)
        #expect(over.bytes.count <= PushPayload.maxBytes)
    }

    /// Property: whatever the feed sends in the fields the rule covers, the payload fits.
    @Test(arguments: 0..<30)
    func alwaysFitsInFourKilobytes(seed: Int) throws {
        var rng = SeededGenerator(seed: UInt64(seed) + 1000)
        let units = ["a", "é", "\"", "\\", "\n", "\u{1}", "🏏", "Mumbai Indians ", "\u{2028}"]
        func text() -> String {
            let unit = units.randomElement(using: &rng)!
            return String(repeating: unit, count: Int.random(in: 0...4000, using: &rng) / unit.utf8.count + 1)
        }
        let snapshot = F.snapshot(
            home: Team(id: "mi", name: text(), short: "MI"), away: Team(id: "csk", name: text(), short: "CSK"),
            competition: text())
        var content = F.content(snapshot)
        content.event = text()
        content.statusText = text()
        content.bowler = text()
        content.batters = (0..<Int.random(in: 0...50, using: &rng)).map { _ in text() }
        var aps = APS(timestamp: 1, event: .start, contentState: content, staleDate: 2,
                      alert: .init(title: text(), body: text()), attributes: ActivityAttributes(activityId: "act_x", snapshot: snapshot))
        if Bool.random(using: &rng) { aps.attributes = nil; aps.attributesType = nil }
        let payload = try PushPayload(aps)
        #expect(payload.bytes.count <= PushPayload.maxBytes)
        #expect(payload.wasShortened == (PushPayload.encode(aps).count > PushPayload.maxBytes))
        _ = try F.object(payload)
    }

    /// `short` comes from the feed unchecked, and it is sent in the attributes of every start.
    @Test func hugeShortNameStillFits() throws {
        let snapshot = F.snapshot(home: Team(id: "mi", name: "Mumbai Indians", short: F.big("MI")))
        let payload = try PushPayload(F.start(snapshot))
        #expect(payload.bytes.count <= PushPayload.maxBytes)
        #expect(payload.wasShortened)
    }

    /// A single grapheme of thousands of combining marks is one `Character`: a cut by characters
    /// leaves it whole.
    @Test func combiningMarkFloodStillFits() throws {
        var content = F.content()
        content.summary = "e" + String(repeating: "\u{301}", count: 3000)
        let payload = try PushPayload(F.update(content))
        #expect(payload.bytes.count <= PushPayload.maxBytes)
    }
}
