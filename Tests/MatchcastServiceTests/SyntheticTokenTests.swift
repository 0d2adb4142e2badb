import MatchcastCore
@testable import MatchcastService
import Testing

/// Synthetic tokens stand in for devices' tokens in replays and benchmarks, whose output is compared byte for byte
/// from one release to the next: the same seed must keep giving the same token.
@Suite("SyntheticToken: the same 64 hex digits for the same seed")
struct SyntheticTokenTests {
    /// The tokens as first written: FNV-1a of the seed, then four numbers of a seeded generator in 16 hex digits each.
    static func reference(_ seed: String) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in seed.utf8 { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        var rng = SeededGenerator(seed: hash)
        return (0..<4).map { _ in
            let hex = String(rng.next(), radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    @Test("each token is the reference's, 64 lowercase hex digits", arguments: [
        "", "update:act_1", "push-to-start:replay-device-000001", "push-to-start:bench-device-0999999", "ü:🎾",
    ])
    func sameAsReference(seed: String) {
        let token = SyntheticToken.make(for: seed)
        #expect(token == Self.reference(seed))
        #expect(token.utf8.count == 64)
        #expect(token.utf8.allSatisfy { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) || (UInt8(ascii: "a")...UInt8(ascii: "f")).contains($0) })
    }

    @Test("a thousand seeds give a thousand different tokens, each the reference's")
    func manySeeds() {
        let tokens = (0..<1000).map { SyntheticToken.make(for: "update:act_\($0)") }
        #expect(Set(tokens).count == 1000)
        #expect(tokens.enumerated().allSatisfy { $1 == Self.reference("update:act_\($0)") })
    }
}
