import Foundation
import Testing
@testable import MatchcastCore

// Tag, TTL and urgency (docs/formats.md, "Live surface": "Replacing, expiry, urgency").

@Suite("Live surface routing")
struct LiveSurfaceRoutingTests {
    typealias F = SurfaceFixture

    @Test func tagIsTheMatchIdPrefixedAndDiffersPerMatch() throws {
        let surface = try F.surface(F.t20Chase)
        #expect(surface.tag == "mc-ipl-2026-m41")
        var other = surface
        other.matchId = "ipl-2026-m42"
        #expect(other.tag != surface.tag)
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
