import Crypto

/// The `apns-id` of a delivery: a UUID derived from the delivery id, so every retry of a delivery
/// carries the same one and APNs' answers and logs can be matched to it.
///
/// The first 16 bytes of SHA-256 of the id, with the version nibble set to 8 and the variant bits to
/// `10` (an RFC 9562 version 8, "custom", UUID), written lowercase as `8-4-4-4-12` hex digits.
public enum APNsNotificationID {
    public static func uuid(forDeliveryId id: String) -> String {
        var bytes = Array(SHA256.hash(data: Array(id.utf8)).prefix(16))
        bytes[6] = (bytes[6] & 0x0F) | 0x80
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(36)
        for (index, byte) in bytes.enumerated() {
            if index == 4 || index == 6 || index == 8 || index == 10 { text.append(UInt8(ascii: "-")) }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
