import Foundation
@testable import MatchcastStore
import Testing

/// `MatchLeases` on PostgreSQL (several replicas) and in one process: the same rules for both.
@Suite("Match leases")
struct PostgresLeaseTests {
    enum Kind: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case local
        /// Only when `MATCHCAST_POSTGRES_URL` is set, as for the contract suite.
        case postgres

        static var allCases: [Kind] { PostgresTestServer.isConfigured ? [.local, .postgres] : [.local] }

        var testDescription: String { rawValue }

        func withLeases(_ body: (any MatchLeases) async throws -> Void) async throws {
            switch self {
            case .local:
                let instant = Date(timeIntervalSince1970: 1_776_780_000)
                try await body(LocalMatchLeases(now: { instant }))
            case .postgres:
                try await PostgresTestServer.withFreshStore { store in try await body(store) }
            }
        }
    }

    /// A lease whose time is already up when it is written.
    static let expired = Duration.seconds(-60)

    @Test(arguments: Kind.allCases)
    func oneOwnerAtATimeUntilItReleases(_ kind: Kind) async throws {
        try await kind.withLeases { leases in
            let first = try #require(try await leases.claim(matchId: "m1", owner: "replica-a", ttl: .seconds(30)))
            #expect(first.reason == .acquired)
            #expect(first.lease.owner == "replica-a")
            #expect(first.lease.generation == 1)
            #expect(try await leases.claim(matchId: "m1", owner: "replica-b", ttl: .seconds(30)) == nil)

            let again = try #require(try await leases.claim(matchId: "m1", owner: "replica-a", ttl: .seconds(30)))
            #expect(again.reason == .renewed)
            #expect(again.lease.generation == 1)
            #expect(try await leases.renew(matchIds: ["m1"], owner: "replica-a", ttl: .seconds(30)).map(\.matchId) == ["m1"])
            #expect(try await leases.renew(matchIds: ["m1"], owner: "replica-b", ttl: .seconds(30)).isEmpty)
            // Several at once, in one call: only the owner's come back, and only the owner's time moves.
            _ = try await leases.claim(matchId: "m2", owner: "replica-b", ttl: .seconds(30))
            let before = try await leases.leases().map(\.expiresAt)
            #expect(try await leases.renew(matchIds: ["m2", "m1"], owner: "replica-a", ttl: .seconds(300)).map(\.matchId) == ["m1"])
            let after = try await leases.leases().map(\.expiresAt)
            #expect(after[0] > before[0].addingTimeInterval(200) && after[1] == before[1])
            #expect(try await leases.renew(matchIds: ["m1", "m2"], owner: "replica-b", ttl: .seconds(30)).map(\.matchId) == ["m2"])
            try await leases.release(matchId: "m2", owner: "replica-b")
            #expect(try await leases.leases().map(\.owner) == ["replica-a"])

            #expect(try await leases.release(matchId: "m1", owner: "replica-b") == false)
            #expect(try await leases.release(matchId: "m1", owner: "replica-a"))
            #expect(try await leases.release(matchId: "m1", owner: "replica-a") == false)
            #expect(try await leases.leases().isEmpty)
            #expect(try await leases.renew(matchIds: ["m1"], owner: "replica-a", ttl: .seconds(30)).isEmpty)

            // After a release the match is free, and the generation (the fencing token) still grows.
            let next = try #require(try await leases.claim(matchId: "m1", owner: "replica-b", ttl: .seconds(30)))
            #expect(next.reason == .acquired)
            #expect(next.lease.generation == 2)
            #expect(try await leases.leases().map { "\($0.matchId)=\($0.owner)" } == ["m1=replica-b"])
        }
    }

    @Test(arguments: Kind.allCases)
    func anExpiredLeaseIsTakenOverAndItsOwnerLosesIt(_ kind: Kind) async throws {
        try await kind.withLeases { leases in
            _ = try #require(try await leases.claim(matchId: "m1", owner: "replica-a", ttl: Self.expired))
            _ = try #require(try await leases.claim(matchId: "m2", owner: "replica-a", ttl: .seconds(300)))

            let takeover = try #require(try await leases.claim(matchId: "m1", owner: "replica-b", ttl: .seconds(30)))
            #expect(takeover.reason == .takenOver)
            #expect(takeover.lease.owner == "replica-b")
            #expect(takeover.lease.generation == 2)
            // The old owner finds out at its next renewal, and must stop polling the match.
            #expect(try await leases.renew(matchIds: ["m1"], owner: "replica-a", ttl: .seconds(30)).isEmpty)
            // Its live lease elsewhere is untouched.
            #expect(try await leases.claim(matchId: "m2", owner: "replica-b", ttl: .seconds(30)) == nil)
            #expect(try await leases.leases().map { "\($0.matchId)=\($0.owner)" } == ["m1=replica-b", "m2=replica-a"])
        }
    }

    @Test(arguments: Kind.allCases)
    func aWaitingReplicaSeesWhichLeasesExpiredAndWhenTheNextOneDoes(_ kind: Kind) async throws {
        try await kind.withLeases { leases in
            #expect(try await leases.leasesHeldElsewhere(than: "replica-b") == LeasesElsewhere(expired: [], nextExpiry: nil))
            _ = try #require(try await leases.claim(matchId: "m2", owner: "replica-a", ttl: Self.expired))
            _ = try #require(try await leases.claim(matchId: "m1", owner: "replica-a", ttl: Self.expired))
            _ = try #require(try await leases.claim(matchId: "m3", owner: "replica-a", ttl: .seconds(300)))
            _ = try #require(try await leases.claim(matchId: "m4", owner: "replica-a", ttl: .seconds(30)))
            _ = try #require(try await leases.claim(matchId: "m5", owner: "replica-b", ttl: Self.expired))
            _ = try #require(try await leases.claim(matchId: "m6", owner: "replica-c", ttl: .seconds(500)))

            // B's own expired lease is not someone else's to take over; the next foreign expiry is m4's.
            let seen = try await leases.leasesHeldElsewhere(than: "replica-b")
            #expect(seen.expired == ["m1", "m2"])
            let next = try #require(seen.nextExpiry)
            // (Under 30 s by however long the claims after m4's took: seconds on a loaded machine; far from m3's 300 s.)
            #expect(next > .seconds(10) && next <= .seconds(30), "m4's lease expires in \(next)")
            // A released lease is nobody's: not listed as expired (the matches that need a replica are found apart).
            try await leases.release(matchId: "m1", owner: "replica-a")
            #expect(try await leases.leasesHeldElsewhere(than: "replica-b").expired == ["m2"])
            // From A's side: only B's and C's leases count.
            let fromA = try await leases.leasesHeldElsewhere(than: "replica-a")
            #expect(fromA.expired == ["m5"])
            #expect(try #require(fromA.nextExpiry) > .seconds(400))
        }
    }

    @Test(arguments: Kind.allCases)
    func replicasClaimingTogetherGetOneOwnerPerMatch(_ kind: Kind) async throws {
        try await kind.withLeases { leases in
            let matches = ["m1", "m2", "m3"]
            let owners = (0..<6).map { "replica-\($0)" }
            let won = try await withThrowingTaskGroup(of: [String].self) { group in
                for owner in owners {
                    group.addTask {
                        var mine: [String] = []
                        for match in matches where try await leases.claim(matchId: match, owner: owner, ttl: .seconds(30)) != nil {
                            mine.append(match)
                        }
                        return mine
                    }
                }
                var all: [String] = []
                for try await mine in group { all += mine }
                return all
            }
            #expect(won.sorted() == matches)
            let held = try await leases.leases()
            #expect(held.map(\.matchId) == matches)
            #expect(held.allSatisfy { $0.generation == 1 && owners.contains($0.owner) })
        }
    }

    @Test(arguments: Kind.allCases)
    func anEmptyOwnerIsRefused(_ kind: Kind) async throws {
        try await kind.withLeases { leases in
            await #expect(throws: StoreError.invalid) { _ = try await leases.claim(matchId: "m1", owner: "", ttl: .seconds(1)) }
            // (Read first: `#expect(try ...)` right after `await #expect(throws:)` does not compile here.)
            let held = try await leases.leases()
            #expect(held.isEmpty)
        }
    }
}
