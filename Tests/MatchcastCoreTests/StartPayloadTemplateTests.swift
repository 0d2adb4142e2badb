import Foundation
import Testing
@testable import MatchcastCore

/// A kick-off's starts differ only in their activity id: the builder encodes one and splices each id in. Every
/// start it builds must be the bytes a full encode of that start gives.
@Suite("start payloads built from one template")
struct StartPayloadTemplateTests {
    static func snapshot(home: String, away: String, competition: String?) -> MatchSnapshot {
        MatchSnapshot(
            id: "epl-mun-liv", sport: .football, status: .live, competition: competition,
            home: Team(id: "h", name: home, short: "HOM"), away: Team(id: "a", name: away, short: "AWY"),
            score: .teamTotals(TeamScore(home: 1, away: 0, period: "1H", clock: "12'")))
    }

    static func start(_ snapshot: MatchSnapshot, activityId: String, event: String? = nil) throws -> APS {
        var content = try MatchRenderer.render(snapshot).contentState
        content.event = event
        return APS(timestamp: 1_776_784_329, event: .start, contentState: content, staleDate: 1_776_784_629,
                   alert: .init(title: content.summary, body: "\(snapshot.home.name) v \(snapshot.away.name)"),
                   attributes: ActivityAttributes(activityId: activityId, snapshot: snapshot))
    }

    /// Builds a start for each id, in order, with one builder (so later ones come from the template).
    static func built(_ snapshot: MatchSnapshot, ids: [String], event: String? = nil) throws -> [(built: [UInt8], full: [UInt8])] {
        var builder = DeliveryBuilder(bundleId: "com.example.app", seed: 1)
        return try ids.map { id in
            let aps = try start(snapshot, activityId: id, event: event)
            let intent = PushIntent(recipient: .pushToStart, aps: aps, priority: 10, expiration: 0)
            let delivery = try #require(try builder.build(
                intent, matchId: snapshot.id, activityId: id, pushToStartToken: "ptst", now: Date(timeIntervalSince1970: 0)))
            let full = try PushPayload(aps)
            #expect(delivery.payload.aps == full.aps, "the payload carries its own start (as shortened, if it was)")
            return (delivery.payload.bytes, full.bytes)
        }
    }

    @Test(arguments: [
        ("Manchester United", "Liverpool", "Premier League"),
        (#"Quote "FC" \ Back"#, "Ünïcödé 東京 ⚽️", nil),
        ("mcStartActivityIdStandIn7f3a9c51e2", "Stand-in in a name", "cup"),  // the stand-in twice: no template
    ] as [(String, String, String?)])
    func everyStartIsTheFullEncode(home: String, away: String, competition: String?) throws {
        let ids = ["act_0000000001_aaaa", "act_0000000002_bbbbbbbbbbbb", "x", "act:1.2-3_4",
                   #"act "quoted""#, "act/slash", "act_é", "act_0000000003_cccc"]
        for pair in try Self.built(Self.snapshot(home: home, away: away, competition: competition), ids: ids) {
            #expect(pair.built == pair.full)
        }
    }

    @Test func aStartNearTheLimitIsShortenedAsAFullEncodeWouldBe() throws {
        // An event text long enough that some ids push the payload over 4096 bytes and it must be shortened.
        let snapshot = Self.snapshot(home: "Home", away: "Away", competition: "League")
        let base = try PushPayload(try Self.start(snapshot, activityId: "", event: "")).bytes.count
        let event = String(repeating: "e", count: PushPayload.maxBytes - base - 12)
        let ids = ["act_1", "act_0000000002", "act_000000000000000000003", "act_4"]
        let pairs = try Self.built(snapshot, ids: ids, event: event)
        for pair in pairs {
            #expect(pair.built == pair.full)
            #expect(pair.built.count <= PushPayload.maxBytes)
        }
        #expect(pairs.map(\.full.count).contains { $0 < base + event.utf8.count }, "at least one was shortened")
    }

    /// What a store keeps of a kick-off (the template's bytes and where the id goes) gives back each start exactly.
    @Test func aKeptTemplateCutsTheSameStartsAgain() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.app", seed: 1)
        let snapshot = Self.snapshot(home: "Manchester United", away: "Liverpool", competition: "Premier League")
        for id in ["act_0000000001_aaaa", "x", "act:1.2-3_4"] {
            let aps = try Self.start(snapshot, activityId: id)
            let intent = PushIntent(recipient: .pushToStart, aps: aps, priority: 10, expiration: 0)
            let payload = try #require(try builder.build(
                intent, matchId: snapshot.id, activityId: id, pushToStartToken: "ptst", now: Date(timeIntervalSince1970: 0))).payload
            let template = try #require(payload.startTemplate, "a start is cut from the kick-off's template")
            let kept = try StartPayloadTemplate(encoded: template.encoded, activityIdOffset: template.activityIdOffset)
            let again = try #require(kept.payload(activityId: id))
            #expect(again.bytes == payload.bytes)
            #expect(again.aps == payload.aps)
            #expect(again == payload)
        }
    }

    @Test func aDamagedTemplateIsRefused() throws {
        let key = try #require(StartPayloadTemplate.key(for: try Self.start(
            Self.snapshot(home: "Home", away: "Away", competition: nil), activityId: "act_1")))
        let template = try #require(try StartPayloadTemplate(key))
        #expect(throws: InputError.self) {
            try StartPayloadTemplate(encoded: template.encoded, activityIdOffset: template.activityIdOffset + 1)
        }
        #expect(throws: InputError.self) { try StartPayloadTemplate(encoded: template.encoded, activityIdOffset: -1) }
        #expect(throws: InputError.self) {
            try StartPayloadTemplate(encoded: Array(template.encoded.prefix(template.activityIdOffset + 5)), activityIdOffset: template.activityIdOffset)
        }
        #expect(throws: Never.self) {
            try StartPayloadTemplate(encoded: template.encoded, activityIdOffset: template.activityIdOffset)
        }
    }
}
