import Foundation
import Testing
@testable import MatchcastCore

// Topic, tag, TTL and urgency (docs/formats.md, "Live surface": "Replacing, expiry, urgency").

@Suite("Live surface routing")
struct LiveSurfaceRoutingTests {
    typealias F = SurfaceFixture

    static let base64URL = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")

    @Test func topicIs32Base64URLCharactersStablePerMatch() {
        for id in ["ipl-2026-m41", "espn:401547439", "", "ü/?&= ", String(repeating: "x", count: 10_000)] {
            let topic = LiveSurface.topic(forMatch: id)
            #expect(topic.count == 32)
            #expect(topic.allSatisfy { Self.base64URL.contains($0) })
            #expect(LiveSurface.topic(forMatch: id) == topic)
        }
        #expect(LiveSurface.topic(forMatch: "ipl-2026-m41") != LiveSurface.topic(forMatch: "ipl-2026-m42"))
    }

    @Test func topicIsTruncatedSHA256InBase64URL() {
        // Computed apart from this code: base64url(sha256(id)[:24]) with Python's hashlib.
        #expect(LiveSurface.topic(forMatch: "ipl-2026-m41") == "BqbucVSBIvEld4Sw6gpgIS8O1Xd2uoZ9")
        #expect(LiveSurface.topic(forMatch: "espn:401547439") == "giNcsyrPFX2FcuptbXUd7cdaaUrNluVh")
        #expect(LiveSurface.topic(forMatch: "") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NM")
    }

    @Test(arguments: [
        (0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        (3, "ae4b3280e56e2faf83f414a6e3dabe9d5fbe18976544c05fed121accb85b53fc"),
        (55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"),
        (56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"),
        (63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"),
        (64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"),
        (65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"),
        (119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"),
        (120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"),
        (200, "1901da1c9f699b48f6b2636e65cbf73abf99d0441ef67f5c540a42f7051dec6f"),
    ])
    func sha256MatchesReferenceDigests(length: Int, hex: String) {
        // Bytes 0, 1, 2, ... mod 251 at every padding boundary; digests from sha256 outside this code.
        let message = (0..<length).map { UInt8($0 % 251) }
        #expect(Hex.lowercase(PureSHA256.hash(message), count: 32) == hex)
    }

    @Test func sha256OfTheStandardAbc() {
        #expect(Hex.lowercase(PureSHA256.hash(Array("abc".utf8)), count: 32)
                == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    @Test func tagIsTheTopicPrefixed() throws {
        let surface = try F.surface(F.t20Chase)
        #expect(surface.tag == "mc-" + surface.topic)
        #expect(surface.topic == LiveSurface.topic(forMatch: surface.matchId))
    }

    @Test func ttlRunsToTheStaleDateClamped() throws {
        var surface = try F.surface(F.t20Chase)
        let cases: [(stale: Int?, ttl: Int)] = [
            (F.nowSeconds + 300, 300),
            (F.nowSeconds, 0),
            (F.nowSeconds - 10, 0),
            (F.nowSeconds + 10_000_000, 2_419_200),
            (Int.max, 2_419_200),
            (Int.min, 0),
            (nil, 30 * 60),
        ]
        for (stale, ttl) in cases {
            surface.staleDate = stale
            #expect(surface.ttl(now: F.now) == ttl, "\(String(describing: stale))")
            #expect(try surface.fcmMessage(now: F.now).ttl == ttl)
            #expect(try surface.webPushPayload(now: F.now).ttl == ttl)
        }
        surface.staleDate = F.nowSeconds + 300
        #expect(surface.ttl(now: F.now.addingTimeInterval(0.5)) == 299)
        #expect(surface.ttl(now: Date(timeIntervalSince1970: .infinity)) == 0)
        #expect(surface.ttl(now: Date(timeIntervalSince1970: .nan)) == 0)
    }

    @Test func anEndLivesEightHoursWhateverItsDates() throws {
        var end = try F.surface(F.football(.completed, period: "FT"), event: .end)
        #expect(end.ttl(now: F.now) == 8 * 3600)
        end.staleDate = F.nowSeconds - 100
        #expect(end.ttl(now: F.now) == 8 * 3600)
    }

    @Test func urgencyIsHighForStartEndAndKeyMoments() throws {
        let live = F.football(period: "2H", clock: "67'")
        #expect(try F.surface(live, event: .start).isUrgent)
        #expect(try F.surface(live, event: .end).isUrgent)
        #expect(try F.surface(live, keyMoment: true).isUrgent)
        #expect(try !F.surface(live).isUrgent)
    }
}
