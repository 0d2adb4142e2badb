import Foundation
import Testing
@testable import MatchcastCore

// One delivery as one hand-built JSON line (docs/formats.md, "Deliveries"), the builder, and delivery ids.

private enum DeliveryFixture {
    static let crockford = Set("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
    static let now = Date(timeIntervalSince1970: 1_776_784_329.25)

    static func content(summary: String = "MUN 2-1 LIV · 2H 67'") -> ContentState {
        var state = ContentState(status: "live", statusText: "Live", home: .init(name: "MUN", score: "2"),
                                 away: .init(name: "LIV", score: "1"), summary: summary)
        state.period = "2H"
        state.clock = "67'"
        return state
    }

    static func aps(timestamp: Int = 1_776_784_329, summary: String = "MUN 2-1 LIV · 2H 67'") -> APS {
        APS(timestamp: timestamp, event: .update, contentState: content(summary: summary), staleDate: timestamp + 300)
    }

    static func intent(_ aps: APS = aps(), token: String = "80a1b2c3d4e5f60718293a4b5c6d7e8f", priority: Int = 5) -> PushIntent {
        PushIntent(recipient: .updateToken(CompactToken(token)), aps: aps, priority: priority, expiration: aps.staleDate ?? 0)
    }

    static func delivery(
        id: String = "dlv_01JSA4Q7V0ZJ3W9K2M5N8P1R4T", matchId: String = "epl-mun-liv", activityId: String = "act_1",
        target: PushTarget = PushTarget(kind: .updateToken, value: "80a1b2c3"), topic: String = "com.example.matchcast.push-type.liveactivity",
        aps: APS = aps()
    ) throws -> Delivery {
        Delivery(id: id, matchId: matchId, activityId: activityId, target: target,
                 apns: APNsHeaders(topic: topic, priority: 10, expiration: 1_776_784_629), payload: try PushPayload(aps))
    }

    static func record(_ bytes: [UInt8]) throws -> DeliveryRecord {
        try JSONDecoder().decode(DeliveryRecord.self, from: Data(bytes))
    }

    static func object(_ bytes: [UInt8]) throws -> [String: Any] {
        try #require(try JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any])
    }

    /// Where the payload's byte buffer lives: equal addresses mean one shared encoding.
    static func address(_ payload: PushPayload) -> UnsafeRawPointer? {
        payload.bytes.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
    }
}

@Suite("Delivery line")
struct DeliveryTests {
    fileprivate typealias F = DeliveryFixture

    @Test func jsonLineHasTheContractKeys() throws {
        let delivery = try F.delivery()
        let bytes = delivery.jsonBytes()
        #expect(!bytes.contains(UInt8(ascii: "\n")))
        let object = try F.object(bytes)
        #expect(Set(object.keys) == ["id", "matchId", "activityId", "target", "apns", "payload"])
        #expect(object["id"] as? String == "dlv_01JSA4Q7V0ZJ3W9K2M5N8P1R4T")
        #expect(object["matchId"] as? String == "epl-mun-liv")
        #expect(object["activityId"] as? String == "act_1")
        let target = try #require(object["target"] as? [String: Any])
        #expect(target["kind"] as? String == "updateToken")
        #expect(target["value"] as? String == "80a1b2c3")
        let apns = try #require(object["apns"] as? [String: Any])
        #expect(Set(apns.keys) == ["push-type", "topic", "priority", "expiration"])
        #expect(apns["push-type"] as? String == "liveactivity")
        #expect(apns["topic"] as? String == "com.example.matchcast.push-type.liveactivity")
        #expect(apns["priority"] as? Int == 10)
        #expect(apns["expiration"] as? Int == 1_776_784_629)
        let payload = try #require(object["payload"] as? [String: Any])
        let aps = try #require(payload["aps"] as? [String: Any])
        #expect(aps["event"] as? String == "update")
        #expect(aps["timestamp"] as? Int == 1_776_784_329)
        #expect(aps["stale-date"] as? Int == 1_776_784_629)
        #expect((aps["content-state"] as? [String: Any])?["summary"] as? String == "MUN 2-1 LIV · 2H 67'")

        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.hasPrefix(#"{"id":"dlv_01JSA4Q7V0ZJ3W9K2M5N8P1R4T","matchId":"epl-mun-liv","activityId":"act_1","target":{"kind":"updateToken","value":"80a1b2c3"},"apns":{"push-type":"liveactivity","topic":"com.example.matchcast.push-type.liveactivity","priority":10,"expiration":1776784629},"payload":{"aps":"#))
        // The payload is embedded byte for byte.
        #expect(text.hasSuffix(String(decoding: delivery.payload.bytes, as: UTF8.self) + "}"))
    }

    @Test func jsonLineDecodesAsADeliveryRecord() throws {
        let delivery = try F.delivery()
        let record = try F.record(delivery.jsonBytes())
        #expect(record.id == delivery.id)
        #expect(record.matchId == delivery.matchId)
        #expect(record.activityId == delivery.activityId)
        #expect(record.target == delivery.target)
        #expect(record.apns == delivery.apns)
        #expect(record.payload.aps == delivery.payload.aps)
    }

    @Test(arguments: [
        #"quote " and backslash \ and slash /"#,
        "newline \n return \r tab \t",
        "controls \u{0}\u{1}\u{8}\u{B}\u{C}\u{1F} and DEL \u{7F}",
        "non-ASCII: Müller, Đoković, 大谷翔平, 🏏🎾, \u{2028}\u{2029}",
        #"\u0041 is not an escape here, nor is \n"#,
        "",
    ])
    func hostileStringsRoundTrip(text: String) throws {
        let delivery = try F.delivery(
            id: "dlv_" + text, matchId: text, activityId: "act " + text,
            target: PushTarget(kind: .channel, value: text), topic: text + ".push-type.liveactivity",
            aps: F.aps(summary: text))
        let bytes = delivery.jsonBytes()
        // Raw control characters are never allowed inside a JSON string.
        #expect(!bytes.contains { $0 < 0x20 })
        let record = try F.record(bytes)
        #expect(record.id == "dlv_" + text)
        #expect(record.matchId == text)
        #expect(record.activityId == "act " + text)
        #expect(record.target == PushTarget(kind: .channel, value: text))
        #expect(record.apns.topic == text + ".push-type.liveactivity")
        #expect(record.payload.aps.contentState.summary == text)
        #expect(try F.object(bytes)["matchId"] as? String == text)
    }

    @Test func everyASCIICharacterRoundTrips() throws {
        let all = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)
        let delivery = try F.delivery(matchId: all, target: PushTarget(kind: .pushToStartToken, value: all))
        let record = try F.record(delivery.jsonBytes())
        #expect(record.matchId == all)
        #expect(record.target.value == all)
        #expect(record.target.kind == .pushToStartToken)
    }

    @Test func controlCharactersUseShortOrUnicodeEscapes() {
        var out: [UInt8] = []
        JSONText.appendString("a\"b\\c\nd\u{1}e\u{1F}", to: &out)
        #expect(String(decoding: out, as: UTF8.self) == #""a\"b\\c\nd\u0001e\u001f""#)
    }

    @Test func appendJSONAppendsToWhatIsThere() throws {
        let delivery = try F.delivery()
        var out = Array("[".utf8)
        delivery.appendJSON(to: &out)
        out.append(UInt8(ascii: "]"))
        #expect(Array(out.dropFirst().dropLast()) == delivery.jsonBytes())
        let array = try #require(try JSONSerialization.jsonObject(with: Data(out)) as? [Any])
        #expect(array.count == 1)
    }
}

@Suite("Delivery builder")
struct DeliveryBuilderTests {
    fileprivate typealias F = DeliveryFixture

    @Test func updateGoesToTheUpdateTokenWithTheIntentsHeaders() throws {
        var builder = DeliveryBuilder(bundleId: "com.example.matchcast", seed: 1)
        let intent = F.intent(priority: 10)
        let delivery = try #require(try builder.build(intent, matchId: "m", activityId: "act_1", pushToStartToken: "p2s", now: F.now))
        #expect(delivery.target == PushTarget(kind: .updateToken, value: "80a1b2c3d4e5f60718293a4b5c6d7e8f"))
        #expect(delivery.apns == APNsHeaders(topic: "com.example.matchcast.push-type.liveactivity", priority: 10, expiration: intent.expiration))
        #expect(delivery.apns.pushType == "liveactivity")
        #expect(delivery.matchId == "m")
        #expect(delivery.activityId == "act_1")
        #expect(delivery.payload.aps == intent.aps)
    }

    @Test func startGoesToThePushToStartTokenOrNowhere() throws {
        var builder = DeliveryBuilder(bundleId: "b", seed: 1)
        let start = PushIntent(recipient: .pushToStart, aps: F.aps(), priority: 10, expiration: 9)
        #expect(try builder.build(start, matchId: "m", activityId: "a", pushToStartToken: nil, now: F.now) == nil)
        let delivery = try #require(try builder.build(start, matchId: "m", activityId: "a", pushToStartToken: "ptst", now: F.now))
        #expect(delivery.target == PushTarget(kind: .pushToStartToken, value: "ptst"))
    }

    @Test func equalAPSSharesOneEncoding() throws {
        var builder = DeliveryBuilder(bundleId: "b", seed: 7)
        let aps = F.aps()
        let first = try #require(try builder.build(F.intent(aps, token: "t1"), matchId: "m", activityId: "a1", pushToStartToken: nil, now: F.now))
        let second = try #require(try builder.build(F.intent(aps, token: "t2"), matchId: "m", activityId: "a2", pushToStartToken: nil, now: F.now))
        #expect(first.payload.bytes == second.payload.bytes)
        #expect(F.address(first.payload) == F.address(second.payload), "the second delivery re-encoded the payload")
        let other = try #require(try builder.build(F.intent(F.aps(timestamp: 5)), matchId: "m", activityId: "a3", pushToStartToken: nil, now: F.now))
        #expect(other.payload.bytes != first.payload.bytes)
        #expect(F.address(other.payload) != F.address(first.payload))
        #expect(first.id != second.id && second.id != other.id)
    }

    @Test func idsAreUniqueAndTheSameSeedGivesTheSameIds() throws {
        func ids(seed: UInt64) throws -> [String] {
            var builder = DeliveryBuilder(bundleId: "b", seed: seed)
            return try (0..<500).map { index in
                let now = F.now.addingTimeInterval(Double(index / 100))
                return try #require(try builder.build(F.intent(), matchId: "m", activityId: "a", pushToStartToken: nil, now: now)).id
            } + [builder.makeActivityId(now: F.now)]
        }
        let a = try ids(seed: 42)
        #expect(Set(a).count == a.count)
        #expect(try ids(seed: 42) == a)
        #expect(try ids(seed: 43) != a)
        #expect(a.dropLast().allSatisfy { $0.hasPrefix("dlv_") })
        #expect(a.last?.hasPrefix("act_") == true)
    }

    @Test func payloadTooLargeIsThrownNotDropped() {
        var builder = DeliveryBuilder(bundleId: "b", seed: 1)
        var content = F.content()
        content.summary = "e" + String(repeating: "\u{301}", count: 3000)  // cannot be cut by characters
        let aps = APS(timestamp: 1, event: .update, contentState: content, staleDate: 2)
        guard PushPayload.encode(aps).count > PushPayload.maxBytes else { return }
        // Either it fits after shortening or the builder throws: it never returns a silent nil.
        do {
            let delivery = try builder.build(F.intent(aps), matchId: "m", activityId: "a", pushToStartToken: nil, now: F.now)
            #expect(delivery != nil)
            #expect((delivery?.payload.bytes.count ?? .max) <= PushPayload.maxBytes)
        } catch {
            #expect(error.bytes > PushPayload.maxBytes)
        }
    }
}

@Suite("Identifier")
struct IdentifierTests {
    fileprivate typealias F = DeliveryFixture

    /// The 48-bit millisecond time at the front of an id.
    private func milliseconds(_ id: String, prefix: String) -> Int64? {
        let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ")
        var value: Int64 = 0
        for character in id.dropFirst(prefix.count).prefix(10) {
            guard let digit = alphabet.firstIndex(of: character) else { return nil }
            value = value * 32 + Int64(digit)
        }
        return value
    }

    @Test func formatIsPrefixAndTwentySixCrockfordCharacters() {
        var rng = SeededGenerator(seed: 3)
        for ms: Int64 in [0, 1, 1_776_784_329_250, (1 << 48) - 1] {
            let id = Identifier.make(prefix: "dlv_", milliseconds: ms, using: &rng)
            #expect(id.hasPrefix("dlv_"))
            let body = id.dropFirst(4)
            #expect(body.count == 26)
            #expect(body.allSatisfy { F.crockford.contains($0) }, "\(id)")
            #expect(milliseconds(id, prefix: "dlv_") == ms)
        }
    }

    @Test func timePartIsFixedAndSortsWithTime() {
        var rng = SeededGenerator(seed: 9)
        #expect(Identifier.make(prefix: "", milliseconds: 0, using: &rng).hasPrefix("0000000000"))
        #expect(Identifier.make(prefix: "", milliseconds: -5, using: &rng).hasPrefix("0000000000"))
        #expect(Identifier.make(prefix: "", milliseconds: 32, using: &rng).hasPrefix("0000000010"))
        let earlier = Identifier.make(prefix: "dlv_", milliseconds: 1_776_784_329_250, using: &rng)
        let later = Identifier.make(prefix: "dlv_", milliseconds: 1_776_784_329_251, using: &rng)
        #expect(earlier < later)
    }

    @Test func randomPartComesFromTheGenerator() {
        var a = SeededGenerator(seed: 11)
        var b = SeededGenerator(seed: 11)
        var c = SeededGenerator(seed: 12)
        let x = Identifier.make(prefix: "act_", milliseconds: 5, using: &a)
        #expect(x == Identifier.make(prefix: "act_", milliseconds: 5, using: &b))
        #expect(x != Identifier.make(prefix: "act_", milliseconds: 5, using: &c))
        #expect(x != Identifier.make(prefix: "act_", milliseconds: 5, using: &a))
        // 80 random bits: no two of many ids in one millisecond collide, and every character is used.
        var rng = SeededGenerator(seed: 1)
        let ids = (0..<5000).map { _ in Identifier.make(prefix: "", milliseconds: 5, using: &rng) }
        #expect(Set(ids).count == ids.count)
        #expect(Set(ids.flatMap { $0.dropFirst(10) }) == F.crockford)
    }
}
