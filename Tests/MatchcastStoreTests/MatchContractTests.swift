import Foundation
import MatchcastCore
import MatchcastStore
import Testing

private typealias F = StoreFixture

@Suite("Store contract: matches")
struct MatchContractTests {
    @Test(arguments: StoreKind.allCases)
    func matchesRoundTripAndUpsert(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let football = MatchRecord(snapshot: F.football(.live, 1, 0, clock: "12'", seq: 2), updatedAt: F.at(2))
            let tennis = MatchRecord(snapshot: F.tennis(), updatedAt: F.at(30))
            try await store.saveMatch(tennis)
            try await store.saveMatch(football)
            #expect(try await store.match(id: "wimbledon-sf1") == tennis)
            #expect(try await store.match(id: "epl-mun-liv") == football)
            #expect(try await store.match(id: "nope") == nil)
            #expect(try await store.matches().map(\.matchId) == ["epl-mun-liv", "wimbledon-sf1"])

            let final = MatchRecord(snapshot: F.football(.completed, 2, 1, clock: "90+4'", seq: 9), updatedAt: F.at(9))
            try await store.saveMatch(final)
            #expect(try await store.match(id: "epl-mun-liv") == final)
            #expect(try await store.matches().count == 2)

            #expect(try await store.deleteMatch(id: "epl-mun-liv"))
            #expect(try await store.deleteMatch(id: "epl-mun-liv") == false)
            #expect(try await store.matches() == [tennis])
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRecordThatContradictsItsSnapshotIsRefused(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let record = MatchRecord(matchId: "other", snapshot: F.tennis(), updatedAt: F.at(0))
            await #expect(throws: StoreError.invalid) { try await store.saveMatch(record) }
            let matches = try await store.matches()
            #expect(matches.isEmpty)
        }
    }
}
