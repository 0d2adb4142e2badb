import Crypto
import MatchcastCore

/// The `apns-id` of a delivery: a UUID derived from the delivery id, so every retry of a delivery
/// carries the same one and APNs' answers and logs can be matched to it.
///
/// The first 16 bytes of SHA-256 of the id, with the version nibble set to 8 and the variant bits to
/// `10` (an RFC 9562 version 8, "custom", UUID), written lowercase as `8-4-4-4-12` hex digits.
public enum APNsNotificationID {
    public static func uuid(forDeliveryId id: String) -> String {
        var id = id
        let digest = id.withUTF8 { SHA256.hash(data: UnsafeRawBufferPointer($0)) }
        return digest.withUnsafeBytes { hash in
            String(unsafeUninitializedCapacity: 36) { text in
                var position = 0
                for index in 0..<16 {
                    var byte = hash[index]
                    if index == 6 { byte = (byte & 0x0F) | 0x80 }
                    if index == 8 { byte = (byte & 0x3F) | 0x80 }
                    if index == 4 || index == 6 || index == 8 || index == 10 {
                        text[position] = UInt8(ascii: "-")
                        position += 1
                    }
                    text[position] = Hex.digit(byte >> 4)
                    text[position + 1] = Hex.digit(byte & 0xF)
                    position += 2
                }
                return position
            }
        }
    }
}
