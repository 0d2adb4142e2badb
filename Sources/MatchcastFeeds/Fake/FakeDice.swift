import MatchcastCore

/// The fake feed's only source of chance: a `SeededGenerator` per scenario, so that one
/// scenario's outcome does not depend on which other scenarios the feed runs.
struct FakeDice {
    private var generator: SeededGenerator

    init(seed: UInt64, scenario: String) {
        generator = SeededGenerator(seed: seed ^ fnv1a64(scenario))
    }

    /// A number in `range`, each equally likely (to within 2^-64).
    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(generator.next() % UInt64(range.count))
    }

    /// A number in `0 ..< 1` from the top 53 bits, the same on every machine.
    mutating func unit() -> Double {
        Double(generator.next() >> 11) * 0x1p-53
    }

    mutating func chance(_ probability: Double) -> Bool {
        unit() < probability
    }

    mutating func pick<Element>(_ items: [Element]) -> Element {
        items[int(0...(items.count - 1))]
    }

    /// Simulated seconds in `range`, whole seconds so timelines print cleanly.
    mutating func seconds(_ range: ClosedRange<Int>) -> Double {
        Double(int(range))
    }
}

/// FNV-1a, 64 bits: a stable hash (unlike `Hasher`, which is seeded per process).
func fnv1a64(_ text: String) -> UInt64 {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in text.utf8 {
        hash ^= UInt64(byte)
        hash &*= 0x0000_0100_0000_01b3
    }
    return hash
}
