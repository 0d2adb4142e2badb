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

    @Test("a match's priority-10 pushes of the last hour are kept with it, replaced by each save", arguments: StoreKind.allCases)
    func highPrioritySendsRoundTrip(_ kind: StoreKind) async throws {
        try await kind.withStore { store in
            let sends = [Int(F.at(0).timeIntervalSince1970), Int(F.at(600).timeIntervalSince1970), Int(F.at(601).timeIntervalSince1970)]
            let goal = MatchRecord(snapshot: F.football(.live, 1, 0, clock: "12'", seq: 2), updatedAt: F.at(601), highPrioritySends: sends)
            try await store.saveMatch(goal)
            #expect(try await store.match(id: "epl-mun-liv")?.highPrioritySends == sends)
            #expect(try await store.matches().first?.ledger.count(at: F.at(700)) == 3)
            // Saved again without sends (an hour later, all gone): none come back.
            let later = MatchRecord(snapshot: F.football(.live, 1, 0, clock: "75'", seq: 3), updatedAt: F.at(4500))
            try await store.saveMatch(later)
            #expect(try await store.match(id: "epl-mun-liv")?.highPrioritySends == [])
            // More than one a second for an hour cannot be a ledger: refused before it is written.
            let flood = MatchRecord(snapshot: F.tennis(), updatedAt: F.at(0), highPrioritySends: Array(repeating: 1, count: 3601))
            await #expect(throws: StoreError.invalid) { try await store.saveMatch(flood) }
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
