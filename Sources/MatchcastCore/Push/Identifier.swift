/// ULID-shaped identifiers (`dlv_01J…`, `act_01J…`): time-ordered, from an injected time and generator
/// so that replay produces the same ids on every run.
public enum Identifier {
    /// Crockford's base 32, read through its pointer: a literal in the binary, with no lazy global to check and no
    /// array to bounds-check on each of an id's 26 characters.
    private static var alphabet: StaticString { "0123456789ABCDEFGHJKMNPQRSTVWXYZ" }

    /// `prefix` + 26 Crockford base-32 characters: 48 bits of milliseconds, 80 random bits.
    public static func make(prefix: String, milliseconds: Int64, using rng: inout some RandomNumberGenerator) -> String {
        let high = rng.next() as UInt64
        let low = rng.next() as UInt64
        var prefix = prefix
        let head = prefix.utf8.count
        // Written straight into the string's storage: one allocation per id (ids are made per delivery).
        return prefix.withUTF8 { prefixBytes in
            String(unsafeUninitializedCapacity: head + 26) { out in
                _ = out.initialize(fromContentsOf: prefixBytes)
                let chars = UnsafeMutableBufferPointer(rebasing: out[head..<(head + 26)])
                let alphabet = Self.alphabet.utf8Start
                var time = UInt64(max(0, milliseconds))
                for index in stride(from: 9, through: 0, by: -1) {
                    chars[index] = alphabet[Int(time & 31)]
                    time >>= 5
                }
                var high = high
                var low = low
                for index in 10..<26 {
                    let source = index < 18
                    chars[index] = alphabet[Int((source ? high : low) & 31)]
                    if source { high >>= 5 } else { low >>= 5 }
                }
                return head + 26
            }
        }
    }
}
