import Crypto
import MatchcastCore

/// One webhook request's worth of deliveries: its `webhook-id` and its body, built once and reused
/// by every attempt.
public struct WebhookBatch: Sendable {
    /// `msg_` and 26 hex digits derived from the delivery ids, so a retried batch keeps its id.
    public let id: String
    public let deliveries: [Delivery]
    /// `{"deliveries":[...]}`, each delivery's JSON embedded as `Delivery.appendJSON` writes it.
    public let body: [UInt8]

    public init(_ deliveries: [Delivery]) {
        self.deliveries = deliveries
        id = Self.id(for: deliveries)
        body = Self.body(for: deliveries)
    }

    /// The batch id for `deliveries`: the first 26 hex digits of SHA-256 over their ids, each ended by
    /// a NUL byte (which no id contains), so that `["ab", "c"]` and `["a", "bc"]` differ.
    public static func id(for deliveries: some Sequence<Delivery>) -> String {
        var hasher = SHA256()
        let nul: [UInt8] = [0]
        for delivery in deliveries {
            var id = delivery.id
            id.withUTF8 { hasher.update(bufferPointer: UnsafeRawBufferPointer($0)) }
            hasher.update(data: nul)
        }
        let hex = hasher.finalize().map { byte in
            let digits = Array("0123456789abcdef".utf8)
            return String(decoding: [digits[Int(byte >> 4)], digits[Int(byte & 0xF)]], as: UTF8.self)
        }.joined()
        return "msg_" + hex.prefix(26)
    }

    /// The request body for `deliveries`.
    public static func body(for deliveries: some Collection<Delivery>) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(deliveries.reduce(32) { $0 + $1.payload.bytes.count + 320 })
        out.append(contentsOf: #"{"deliveries":["#.utf8)
        var writer = DeliveryJSONWriter()
        var first = true
        for index in deliveries.indices {
            if !first { out.append(UInt8(ascii: ",")) }
            first = false
            writer.append(deliveries[index], to: &out)
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }
}
