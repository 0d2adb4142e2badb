import Testing
@testable import MatchcastService

/// The list of wanted matches the poll sources look up after each poll: a follow change's list always goes in; a
/// periodic list begun before it must not put an older answer over it.
@Suite("wanted matches: the poll sources' list")
struct WantedMatchesTests {
    @Test func aListBegunBeforeAFollowChangeIsDropped() {
        let wanted = WantedMatches()
        wanted.replace(with: ["a", "b"])
        #expect(wanted.contains("a") && wanted.contains("b") && !wanted.contains("c"))

        let periodic = wanted.version
        wanted.replace(with: ["a", "b", "c"])  // a follow of "c" listed meanwhile
        wanted.replace(with: ["a", "b"], ifStill: periodic)  // the periodic list, read before the follow
        #expect(wanted.contains("c"), "the newer list stays")

        let next = wanted.version
        wanted.replace(with: ["a"], ifStill: next)  // "b" and "c" unfollowed through another replica
        #expect(wanted.contains("a") && !wanted.contains("b") && !wanted.contains("c"))
    }

    @Test func aPeriodicListKeepsTheFollowChangesMadeWhileItWasRead() {
        let wanted = WantedMatches()
        wanted.replace(with: ["a", "b"])
        let periodic = wanted.version
        wanted.insert("c")  // followed while the periodic list was read
        wanted.remove("b")  // its last follower left meanwhile
        // Read before both: it still has "b", not "c"; and "d", whose follow this replica never heard of.
        wanted.replace(with: ["a", "b", "d"], ifStill: periodic)
        #expect(wanted.contains("a") && wanted.contains("c") && wanted.contains("d"))
        #expect(!wanted.contains("b"), "the unfollow made meanwhile stands")

        // The next periodic list decides every match again.
        let next = wanted.version
        wanted.replace(with: ["a"], ifStill: next)
        #expect(wanted.contains("a") && !wanted.contains("c") && !wanted.contains("d"))
    }
}

