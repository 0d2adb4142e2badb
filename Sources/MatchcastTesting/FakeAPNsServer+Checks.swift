import Crypto
import Foundation
import NIOCore
import NIOHPACK

extension FakeAPNsServer {
    /// A request APNs would refuse: the status and reason it would answer.
    struct Refusal: Error, Sendable, Hashable {
        var status: Int
        var reason: String
    }

    /// Verifies provider tokens as APNs does: ES256 over `header.claims` with the team's public key,
    /// the right `kid` and `iss`, and an `iat` under an hour old (older is `ExpiredProviderToken`).
    struct ProviderTokenVerifier: Sendable {
        let publicKey: P256.Signing.PublicKey
        let keyId: String
        let teamId: String
        let now: @Sendable () -> Date

        private struct Header: Decodable {
            var alg: String
            var kid: String
        }

        private struct Claims: Decodable {
            var iss: String
            var iat: Int64
        }

        /// The `iat` of a token that passes, or why it does not.
        func verify(_ jwt: String) -> Result<Int64, Refusal> {
            let invalid = Refusal(status: 403, reason: "InvalidProviderToken")
            let parts = jwt.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3,
                  let headerBytes = Self.decode(parts[0]), let claimBytes = Self.decode(parts[1]),
                  let signatureBytes = Self.decode(parts[2]),
                  let header = try? JSONDecoder().decode(Header.self, from: Data(headerBytes)),
                  let claims = try? JSONDecoder().decode(Claims.self, from: Data(claimBytes))
            else { return .failure(invalid) }
            guard header.alg == "ES256", header.kid == keyId, claims.iss == teamId else { return .failure(invalid) }
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
                  publicKey.isValidSignature(signature, for: Array("\(parts[0]).\(parts[1])".utf8))
            else { return .failure(invalid) }
            let age = Int64(now().timeIntervalSince1970) - claims.iat
            guard age < 3600 else { return .failure(Refusal(status: 403, reason: "ExpiredProviderToken")) }
            guard age > -3600 else { return .failure(invalid) }
            return .success(claims.iat)
        }

        private static func decode(_ part: Substring) -> [UInt8]? {
            guard !part.isEmpty, !part.contains("=") else { return nil }
            var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            guard text.utf8.count % 4 != 1 else { return nil }
            while text.utf8.count % 4 != 0 { text.append("=") }
            return Data(base64Encoded: text).map(Array.init)
        }
    }

    /// The checks APNs makes on one request, in the order it makes them.
    enum RequestCheck {
        struct Checked {
            var token: String?
            var apnsID: String?
            var providerToken: String?
            var result: Result<Notification, Refusal>
        }

        /// - Parameters:
        ///   - verify: the provider-token check (the connection caches it per token).
        ///   - bodyIsValid: whether the body is a JSON object with `aps` (cached per payload).
        static func check(
            _ headers: HPACKHeaders, body: ByteBuffer, verify: (String) -> Result<Int64, Refusal>,
            bodyIsValid: (ByteBuffer) -> Bool
        ) -> Checked {
            // One pass over the fields (names arrive lowercase over HTTP/2); the first of each counts.
            var method: String?, path: String?, authorization: String?, pushTypeField: String?, topicField: String?
            var priorityField: String?, expirationField: String?, apnsID: String?
            for field in headers {
                switch field.name {
                case ":method": if method == nil { method = field.value }
                case ":path": if path == nil { path = field.value }
                case "authorization": if authorization == nil { authorization = field.value }
                case "apns-push-type": if pushTypeField == nil { pushTypeField = field.value }
                case "apns-topic": if topicField == nil { topicField = field.value }
                case "apns-priority": if priorityField == nil { priorityField = field.value }
                case "apns-expiration": if expirationField == nil { expirationField = field.value }
                case "apns-id": if apnsID == nil { apnsID = field.value }
                default: break
                }
            }
            let prefix = "/3/device/"
            let token = path.flatMap { $0.hasPrefix(prefix) ? String($0.utf8.dropFirst(prefix.utf8.count))! : nil }
            let jwt = authorization.flatMap(bearerToken)
            var checked = Checked(token: token, apnsID: apnsID, providerToken: jwt, result: .failure(Refusal(status: 500, reason: "InternalServerError")))
            checked.result = Result { () throws(Refusal) -> Notification in
                guard method == "POST" else { throw Refusal(status: 405, reason: "MethodNotAllowed") }
                guard let token else { throw Refusal(status: 404, reason: "BadPath") }
                guard !token.isEmpty else { throw Refusal(status: 400, reason: "MissingDeviceToken") }
                guard token.utf8.count % 2 == 0, Self.allHex(token) else {
                    throw Refusal(status: 400, reason: "BadDeviceToken")
                }
                guard let jwt else { throw Refusal(status: 403, reason: "MissingProviderToken") }
                let issuedAt = try verify(jwt).get()
                guard let pushType = pushTypeField, pushType == "liveactivity" else {
                    throw Refusal(status: 400, reason: "InvalidPushType")
                }
                guard let topic = topicField else { throw Refusal(status: 400, reason: "MissingTopic") }
                guard Self.hasLiveActivitySuffix(topic) else {
                    throw Refusal(status: 400, reason: "BadTopic")
                }
                guard let priority = priorityField.flatMap(Int.init), priority == 5 || priority == 10 else {
                    throw Refusal(status: 400, reason: "BadPriority")
                }
                guard let apnsID, Self.isUUID(apnsID) else { throw Refusal(status: 400, reason: "BadMessageId") }
                var expiration: Int?
                if let text = expirationField {
                    guard let value = Int(text), value >= 0 else { throw Refusal(status: 400, reason: "BadExpirationDate") }
                    expiration = value
                }
                guard body.readableBytes > 0 else { throw Refusal(status: 400, reason: "PayloadEmpty") }
                guard body.readableBytes <= 4096 else { throw Refusal(status: 413, reason: "PayloadTooLarge") }
                guard bodyIsValid(body) else { throw Refusal(status: 400, reason: "BadPayload") }
                return Notification(
                    token: token, pushType: pushType, topic: topic, priority: priority, expiration: expiration,
                    apnsID: apnsID, providerToken: jwt, issuedAt: issuedAt, body: [])
            }
            return checked
        }

        /// The token of an `authorization` field: `bearer ` (any case) and something after it.
        static func bearerToken(_ authorization: String) -> String? {
            let utf8 = authorization.utf8
            guard utf8.count > 7, utf8.prefix(7).lazy.map({ $0 | 0x20 }).elementsEqual("bearer ".utf8) else { return nil }
            return String(utf8.dropFirst(7))
        }

        private static func isHexDigit(_ byte: UInt8) -> Bool {
            (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
        }

        /// Even-length hex is checked by the caller; this is the digits (over the contiguous bytes).
        private static func allHex(_ text: String) -> Bool {
            var text = text
            return text.withUTF8 { bytes in bytes.allSatisfy(isHexDigit) }
        }

        private static let liveActivitySuffix = Array(".push-type.liveactivity".utf8)

        /// Ends in `.push-type.liveactivity`, with something before it.
        private static func hasLiveActivitySuffix(_ topic: String) -> Bool {
            var topic = topic
            return topic.withUTF8 { bytes in
                bytes.count > liveActivitySuffix.count && bytes.suffix(liveActivitySuffix.count).elementsEqual(liveActivitySuffix)
            }
        }

        /// `8-4-4-4-12` hex digits, as `UUID(uuidString:)` accepts them.
        static func isUUID(_ text: String) -> Bool {
            var text = text
            return text.withUTF8 { bytes in
                guard bytes.count == 36 else { return false }
                for index in 0..<36 {
                    if index == 8 || index == 13 || index == 18 || index == 23 {
                        guard bytes[index] == UInt8(ascii: "-") else { return false }
                    } else {
                        guard isHexDigit(bytes[index]) else { return false }
                    }
                }
                return true
            }
        }

        /// A JSON object with an `aps` object.
        static func isValidPayload(_ body: ByteBuffer) -> Bool {
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else { return false }
            return object["aps"] is [String: Any]
        }
    }
}
