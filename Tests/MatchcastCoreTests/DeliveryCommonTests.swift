import Foundation
import Testing
@testable import MatchcastCore

// A delivery's match, headers and payload sit behind one `Delivery.Common` shared by every delivery of an update.
// Sharing is an optimisation only: equality and hashing are by value, and a setter changes one delivery alone.

private enum CommonFixture {
    static let now = Date(timeIntervalSince1970: 1_776_784_329.25)
    static let topic = "com.example.matchcast.push-type.liveactivity"

    static func aps(timestamp: Int = 1_776_784_329, score: String = "2") -> APS {
        let state = ContentState(status: "live", statusText: "Live", home: .init(name: "MUN", score: score),
                                 away: .init(name: "LIV", score: "1"), summary: "MUN \(score)-1 LIV")
        return APS(timestamp: timestamp, event: .update, contentState: state, staleDate: timestamp + 300)
    }

    static func intent(_ aps: APS = aps(), token: String, priority: Int = 10) -> PushIntent {
        PushIntent(recipient: .updateToken(CompactToken(token)), aps: aps, priority: priority, expiration: aps.staleDate ?? 0)
    }

    static func delivery(id: String = "dlv_1", matchId: String = "m", activityId: String = "act_1",
                         priority: Int = 10, aps: APS = aps()) throws -> Delivery {
        Delivery(id: id, matchId: matchId, activityId: activityId, target: PushTarget(kind: .updateToken, value: "tok"),
                 apns: APNsHeaders(topic: topic, priority: priority, expiration: 1_776_784_629), payload: try PushPayload(aps))
    }

    /// The deliveries of one update to `count` activities, as the manager's builder makes them.
    static func fanOut(_ builder: inout DeliveryBuilder, count: Int, matchId: String = "m", aps: APS = aps(),
                       priority: Int = 10) throws -> [Delivery] {
        try (0..<count).map { n in
            try #require(try builder.build(intent(aps, token: "tok_\(n)", priority: priority), matchId: matchId,
                                           activityId: "act_\(n)", pushToStartToken: nil, now: now))
        }
    }
}

@Suite("Delivery: the shared common part")
struct DeliveryCommonTests {
    fileprivate typealias F = CommonFixture

    @Test("equal by value and hashed alike whether or not the common part is shared")
    func equalityAndHashByValue() throws {
        let a = try F.delivery()
        let b = try F.delivery()  // built apart: equal values, another common part
        #expect(!a.sharesCommonPart(with: b))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(Set([a, b]).count == 1)

        let copy = a
        #expect(copy.sharesCommonPart(with: a))
        #expect(copy == a)

        // Built by the builder (shared part) and by hand (own part), the same values: equal.
        var builder = DeliveryBuilder(bundleId: "com.example.matchcast", seed: 1)
        let built = try F.fanOut(&builder, count: 1)[0]
        let byHand = Delivery(id: built.id, matchId: built.matchId, activityId: built.activityId, target: built.target,
                              apns: built.apns, payload: try PushPayload(built.payload.aps))
        #expect(!byHand.sharesCommonPart(with: built))
        #expect(byHand == built)
        #expect(byHand.hashValue == built.hashValue)
        #expect(byHand.jsonBytes() == built.jsonBytes())
    }

    @Test("each of match, headers and payload takes part in equality and hashing")
    func everyCommonFieldCounts() throws {
        let a = try F.delivery()
        let otherMatch = try F.delivery(matchId: "m2")
        let otherHeaders = try F.delivery(priority: 5)
        let otherPayload = try F.delivery(aps: F.aps(score: "3"))
        for other in [otherMatch, otherHeaders, otherPayload] {
            #expect(a != other)
        }
        #expect(Set([a, otherMatch, otherHeaders, otherPayload]).count == 4)
        #expect(a != (try F.delivery(id: "dlv_2")), "and the per-delivery fields still count")
        #expect(a != (try F.delivery(activityId: "act_2")))
    }

    @Test("a setter changes only its delivery: the others sharing the part keep theirs (copy on write)")
    func settersAreCopyOnWrite() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.matchcast", seed: 3)
        let batch = try F.fanOut(&builder, count: 3)
        #expect(batch[0].sharesCommonPart(with: batch[1]) && batch[1].sharesCommonPart(with: batch[2]))
        let original = batch[1]

        var moved = batch[1]
        moved.matchId = "m2"
        #expect(moved.matchId == "m2")
        #expect(batch.allSatisfy { $0.matchId == "m" }, "the others keep their match")
        #expect(!moved.sharesCommonPart(with: batch[0]))
        #expect(moved != original)
        #expect(moved.apns == original.apns && moved.payload == original.payload, "only the match changed")
        #expect(batch[0].sharesCommonPart(with: batch[2]), "the others still share theirs")

        var reprioritised = batch[1]
        reprioritised.apns.priority = 5  // a nested change through the computed property
        #expect(reprioritised.apns.priority == 5)
        #expect(batch.allSatisfy { $0.apns.priority == 10 })
        #expect(reprioritised.matchId == "m" && reprioritised.payload == original.payload)

        var repaid = batch[1]
        let newPayload = try PushPayload(F.aps(score: "4"))
        repaid.payload = newPayload
        #expect(repaid.payload == newPayload)
        #expect(batch.allSatisfy { $0.payload == original.payload })
        #expect(repaid.matchId == "m" && repaid.apns == original.apns)

        // Set back to the old value: equal again, by value, though no longer sharing.
        moved.matchId = "m"
        #expect(moved == original)
        #expect(moved.hashValue == original.hashValue)
        #expect(!moved.sharesCommonPart(with: original))
        #expect(moved.jsonBytes() == original.jsonBytes())
    }

    @Test("the builder makes every delivery of one update share one common part, and a new part for a new one")
    func builderSharesOnePartPerUpdate() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.matchcast", seed: 5)
        let goal = try F.fanOut(&builder, count: 500)
        #expect(goal.allSatisfy { $0.sharesCommonPart(with: goal[0]) })
        #expect(Set(goal.map(\.id)).count == 500)
        #expect(Set(goal.map(\.activityId)).count == 500)

        // The next update (another payload), another match, other headers: a part of their own each.
        let next = try F.fanOut(&builder, count: 3, aps: F.aps(timestamp: 1_776_784_400, score: "3"))
        #expect(next.allSatisfy { $0.sharesCommonPart(with: next[0]) })
        #expect(!next[0].sharesCommonPart(with: goal[0]))
        let otherMatch = try F.fanOut(&builder, count: 2, matchId: "m2", aps: F.aps(timestamp: 1_776_784_400, score: "3"))
        #expect(otherMatch[0].sharesCommonPart(with: otherMatch[1]))
        #expect(!otherMatch[0].sharesCommonPart(with: next[0]))
        #expect(otherMatch[0].payload == next[0].payload && otherMatch[0].matchId == "m2")
        let routine = try F.fanOut(&builder, count: 2, matchId: "m2", aps: F.aps(timestamp: 1_776_784_400, score: "3"),
                                   priority: 5)
        #expect(!routine[0].sharesCommonPart(with: otherMatch[0]))
        #expect(routine[0].apns.priority == 5 && otherMatch[0].apns.priority == 10)
    }

    @Test("the JSON writer's output does not depend on sharing: interleaved parts, equal or not")
    func writerMatchesAppendJSON() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.matchcast", seed: 9)
        let first = try F.fanOut(&builder, count: 3)
        let sameButOtherMatch = try F.fanOut(&builder, count: 2, matchId: "m2")
        let other = try F.fanOut(&builder, count: 2, aps: F.aps(score: "5"), priority: 5)
        var byHand = try F.delivery(matchId: "m3")
        byHand.apns = first[0].apns
        byHand.payload = first[0].payload  // equal tail, separate part
        let deliveries = [first[0], sameButOtherMatch[0], first[1], other[0], byHand, first[2], other[1], sameButOtherMatch[1]]
        var writer = DeliveryJSONWriter()
        var written: [UInt8] = []
        var expected: [UInt8] = []
        for delivery in deliveries {
            writer.append(delivery, to: &written)
            delivery.appendJSON(to: &expected)
        }
        #expect(written == expected)
    }
}
