/// A jitter seed that is stable for a name (FNV-1a), so every source polls on its own schedule
/// yet a run is reproducible without configuring seeds.
enum SourceSeed {
    static func seed(for name: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in name.utf8 {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }
}
