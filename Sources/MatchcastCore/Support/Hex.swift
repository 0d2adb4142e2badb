/// Lowercase hexadecimal text of bytes (digests, ids), written straight into the string's storage.
public enum Hex {
    public static func lowercase<Bytes: Sequence>(_ bytes: Bytes, count: Int) -> String where Bytes.Element == UInt8 {
        String(unsafeUninitializedCapacity: count * 2) { text in
            var position = 0
            for byte in bytes.prefix(count) {
                text[position] = digit(byte >> 4)
                text[position + 1] = digit(byte & 0xF)
                position += 2
            }
            return position
        }
    }

    /// The ASCII digit of a nibble (0...15).
    @inline(__always)
    public static func digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? 48 + nibble : 87 + nibble
    }
}
