import Foundation
import Testing
@testable import MatchcastCore

private enum AppsBuilderFixture {
    static let now = Date(timeIntervalSince1970: 1_776_784_329.25)
    static let scoresTopic = AppsFixture.scoresTopic
    static let fantasyTopic = AppsFixture.fantasyTopic
    static let kidsTopic = AppsFixture.kidsTopic

    static func aps(timestamp: Int = 1_776_784_329, score: String = "2") -> APS {
        let state = ContentState(status: "live", statusText: "Live", home: .init(name: "MUN", score: score),
                                 away: .init(name: "LIV", score: "1"), summary: "MUN \(score)-1 LIV")
        return APS(timestamp: timestamp, event: .update, contentState: state, staleDate: timestamp + 300)
    }

    /// One update's delivery to each of `devices` (nil: no device, a broadcast channel's), in that order.
    static func fanOut(
        _ builder: inout DeliveryBuilder, to devices: [String?], aps: APS = aps(), matchId: String = "m"
    ) throws -> [Delivery] {
        try devices.enumerated().map { n, device in
            let intent = PushIntent(recipient: .updateToken(CompactToken("tok_\(n)")), aps: aps, priority: 10, expiration: aps.staleDate ?? 0)
            // As the lifecycle does: a device's topic is its app's; no device (a channel) takes the builder's own.
            var topic: String?
            if let device {
                let appTopic: String = try #require(AppsFixture.catalog.topic(ofDevice: device))
                topic = appTopic
            }
            return try #require(try builder.build(
                intent, matchId: matchId, activityId: "act_\(n)", pushToStartToken: nil, topic: topic, now: now))
        }
    }
}

/// The builder with several apps: each delivery carries its device's app's topic, and the deliveries of one update to
/// the devices of several apps, interleaved as a fan-out makes them, still share one common part per app. With the
/// default app alone (or for the default app's devices) the deliveries are the same as before apps existed.
@Suite("Apps: the delivery builder's per-app topics and shared parts")
struct DeliveryBuilderAppsTests {
    fileprivate typealias F = AppsBuilderFixture

    @Test("each delivery carries its device's app's topic; no device (a channel) the default app's")
    func topicsPerApp() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.scores", seed: 7)
        #expect(builder.topic == F.scoresTopic)
        let devices: [String?] = ["dev_a", "fantasy:dev_b", "kids:dev_c", nil]
        let batch = try F.fanOut(&builder, to: devices)
        #expect(batch.map(\.apns.topic) == [F.scoresTopic, F.fantasyTopic, F.kidsTopic, F.scoresTopic])
        // The topic alone differs: one update, one payload, the same headers otherwise.
        #expect(Set(batch.map(\.payload)).count == 1)
        #expect(Set(batch.map(\.apns.priority)) == [10])
        #expect(Set(batch.map(\.id)).count == batch.count)
    }

    @Test("one update to several apps' devices, interleaved: one common part per app, none across apps")
    func interleavedShareOnePartPerApp() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.scores", seed: 11)
        let devices: [String?] = [
            "dev_1", "fantasy:dev_2", "dev_3", "kids:dev_4", "fantasy:dev_5", "dev_6", "kids:dev_7", "fantasy:dev_8", nil,
        ]
        let batch = try F.fanOut(&builder, to: devices)
        let byTopic = Dictionary(grouping: batch, by: \.apns.topic)
        #expect(byTopic.keys.sorted() == [F.fantasyTopic, F.kidsTopic, F.scoresTopic].sorted())
        for (topic, deliveries) in byTopic {
            #expect(deliveries.allSatisfy { $0.sharesCommonPart(with: deliveries[0]) }, "\(topic)")
        }
        let scores = try #require(byTopic[F.scoresTopic]).first!
        let fantasy = try #require(byTopic[F.fantasyTopic]).first!
        let kids = try #require(byTopic[F.kidsTopic]).first!
        #expect(!scores.sharesCommonPart(with: fantasy) && !scores.sharesCommonPart(with: kids) && !fantasy.sharesCommonPart(with: kids))
        #expect(Set(batch.map(\.commonIdentity)).count == 3, "three apps, three parts")
        // The channel's delivery (no device) is the default app's and shares its part.
        #expect(batch[8].sharesCommonPart(with: batch[0]))

        // The next update: new parts, one per app again, none the last update's.
        let next = try F.fanOut(&builder, to: ["fantasy:dev_2", "dev_1", "fantasy:dev_5", "dev_3"], aps: F.aps(timestamp: 1_776_784_400, score: "3"))
        #expect(next[0].sharesCommonPart(with: next[2]) && next[1].sharesCommonPart(with: next[3]))
        #expect(!next[0].sharesCommonPart(with: next[1]))
        #expect(!next[0].sharesCommonPart(with: fantasy) && !next[1].sharesCommonPart(with: scores))
        #expect(next[0].apns.topic == F.fantasyTopic && next[1].apns.topic == F.scoresTopic)

        // Another match, same payload: not the same part, for either app.
        let otherMatch = try F.fanOut(&builder, to: ["fantasy:dev_9", "dev_9"], aps: F.aps(timestamp: 1_776_784_400, score: "3"), matchId: "m2")
        #expect(!otherMatch[0].sharesCommonPart(with: next[0]) && !otherMatch[1].sharesCommonPart(with: next[1]))
        #expect(otherMatch.allSatisfy { $0.matchId == "m2" })
    }

    @Test("the default app's devices alone: every delivery its topic and one part per update, as before apps")
    func defaultAloneAsBefore() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.scores", seed: 5)
        #expect(builder.topic == F.scoresTopic)
        let batch = try F.fanOut(&builder, to: ["dev_1", nil, "dev_2", "dev_3"])
        #expect(batch.allSatisfy { $0.apns.topic == F.scoresTopic })
        #expect(batch.allSatisfy { $0.sharesCommonPart(with: batch[0]) })
    }

    @Test("adding apps changes nothing in the default app's deliveries: same ids, topic, headers and payload")
    func defaultAppUnchangedByOtherApps() throws {
        var alone = DeliveryBuilder(bundleId: "com.example.scores", seed: 42)
        var several = DeliveryBuilder(bundleId: "com.example.scores", seed: 42)
        let devices: [String?] = ["dev_1", "dev_2", nil, "dev_3"]
        for step in 0..<3 {
            let aps = F.aps(timestamp: 1_776_784_329 + step, score: "\(step)")
            let before = try F.fanOut(&alone, to: devices, aps: aps)
            let after = try F.fanOut(&several, to: devices, aps: aps)
            #expect(before == after, "step \(step)")
            #expect(before.map { $0.jsonBytes() } == after.map { $0.jsonBytes() })
        }
        #expect(alone.makeActivityId(now: F.now) == several.makeActivityId(now: F.now), "the same generator, unchanged")
    }
}
