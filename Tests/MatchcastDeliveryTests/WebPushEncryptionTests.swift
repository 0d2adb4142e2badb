import Crypto
import Foundation
import MatchcastTesting
import Testing

@testable import MatchcastDelivery

/// RFC 8291 encryption: the RFC's worked example byte for byte, and what a browser reads back from any message.
@Suite("Web Push encryption (RFC 8291)")
struct WebPushEncryptionTests {
    /// RFC 8291, Appendix A.
    enum Example {
        static let plaintext = "When I grow up, I want to be a watermelon"
        static let senderPrivateKey = "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw"
        static let senderPublicKey = "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8"
        static let userAgentPrivateKey = "q1dXpw3UpT5VOmu_cf_v6ih07Aems3njxI-JWgLcM94"
        static let userAgentPublicKey = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4"
        static let authSecret = "BTBZMqHH6r4Tts7J_aSIgg"
        static let salt = "DGv6ra1nlYgDCS1FRnbzlw"
        static let body = "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPTpK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
    }

    static func bytes(_ base64URL: String) throws -> Data {
        Data(try #require(Base64URL.decode(base64URL)))
    }

    @Test func theRFCsWorkedExampleByteForByte() throws {
        let sender = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(Example.senderPrivateKey))
        #expect(sender.publicKey.x963Representation == (try Self.bytes(Example.senderPublicKey)))
        let body = try WebPushEncryption.encrypt(
            Data(Example.plaintext.utf8), userAgentPublicKey: Self.bytes(Example.userAgentPublicKey),
            authSecret: Self.bytes(Example.authSecret), senderKey: sender, salt: Self.bytes(Example.salt))
        #expect(body == (try Self.bytes(Example.body)))
    }

    /// The browser's side (`WebPushDecryption`, which the fake push service opens every push with and which shares
    /// no code with the encryption), with the record size this sink writes.
    static func decrypt(_ body: Data, userAgentKey: P256.KeyAgreement.PrivateKey, authSecret: Data) throws -> Data {
        try #require(body.count > 20)
        #expect(body.dropFirst(16).prefix(4).reduce(0) { $0 << 8 | Int($1) } == WebPushEncryption.recordSize)
        return try WebPushDecryption.decrypt(body, userAgentKey: userAgentKey, authSecret: authSecret)
    }

    @Test func theRFCsExampleDecryptsWithTheBrowsersKey() throws {
        let browser = try P256.KeyAgreement.PrivateKey(rawRepresentation: Self.bytes(Example.userAgentPrivateKey))
        let plaintext = try Self.decrypt(Self.bytes(Example.body), userAgentKey: browser, authSecret: Self.bytes(Example.authSecret))
        #expect(String(decoding: plaintext, as: UTF8.self) == Example.plaintext)
    }

    @Test func everyMessageTakesAFreshKeyAndSaltAndTheBrowserReadsIt() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { UInt8($0 * 7) })
        let payload = Data(#"{"title":"ARS 1-0 CHE","body":"Goal! Arsenal"}"#.utf8)
        let first = try WebPushEncryption.encrypt(payload, userAgentPublicKey: browser.publicKey.x963Representation, authSecret: auth)
        let second = try WebPushEncryption.encrypt(payload, userAgentPublicKey: browser.publicKey.x963Representation, authSecret: auth)
        #expect(first != second)
        #expect(first.prefix(16) != second.prefix(16), "a salt of its own")
        #expect(first.count == 86 + payload.count + 1 + 16)
        for body in [first, second] {
            #expect(try Self.decrypt(body, userAgentKey: browser, authSecret: auth) == payload)
        }
        // The largest payload one message carries, and one byte more.
        let largest = Data(repeating: 0x61, count: WebPushEncryption.maximumPlaintext)
        let full = try WebPushEncryption.encrypt(largest, userAgentPublicKey: browser.publicKey.x963Representation, authSecret: auth)
        #expect(full.count == WebPushEncryption.recordSize)
        #expect(throws: WebPushEncryption.Failure.tooLarge(3994)) {
            try WebPushEncryption.encrypt(largest + [0x61], userAgentPublicKey: browser.publicKey.x963Representation, authSecret: auth)
        }
    }

    @Test func aSubscriptionsKeysAreCheckedBeforeAnythingIsEncrypted() throws {
        let browser = P256.KeyAgreement.PrivateKey().publicKey
        let auth = Data(repeating: 1, count: 16)
        #expect(throws: WebPushEncryption.Failure.badPublicKey) {
            try WebPushEncryption.encrypt(Data("x".utf8), userAgentPublicKey: browser.compressedRepresentation, authSecret: auth)
        }
        var offCurve = browser.x963Representation
        offCurve[offCurve.count - 1] ^= 0x01
        #expect(throws: WebPushEncryption.Failure.badPublicKey) {
            try WebPushEncryption.encrypt(Data("x".utf8), userAgentPublicKey: offCurve, authSecret: auth)
        }
        #expect(throws: WebPushEncryption.Failure.badAuthSecret) {
            try WebPushEncryption.encrypt(Data("x".utf8), userAgentPublicKey: browser.x963Representation, authSecret: Data(repeating: 1, count: 12))
        }
    }

    @Test func theBrowsersSideOpensNothingElse() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let auth = Data(repeating: 9, count: 16)
        let body = try WebPushEncryption.encrypt(Data("{}".utf8), userAgentPublicKey: browser.publicKey.x963Representation, authSecret: auth)
        #expect(try WebPushDecryption.decrypt(body, userAgentKey: browser, authSecret: auth) == Data("{}".utf8))
        // Another browser, another auth secret, one flipped bit of the record or the salt, a cut body: none opens.
        #expect(throws: WebPushDecryption.Failure.self) { try WebPushDecryption.decrypt(body, userAgentKey: P256.KeyAgreement.PrivateKey(), authSecret: auth) }
        #expect(throws: WebPushDecryption.Failure.self) { try WebPushDecryption.decrypt(body, userAgentKey: browser, authSecret: Data(repeating: 8, count: 16)) }
        for index in [0, body.count - 1] {
            var tampered = body
            tampered[index] ^= 0x01
            #expect(throws: WebPushDecryption.Failure.self) { try WebPushDecryption.decrypt(tampered, userAgentKey: browser, authSecret: auth) }
        }
        #expect(throws: WebPushDecryption.Failure.self) { try WebPushDecryption.decrypt(body.prefix(90), userAgentKey: browser, authSecret: auth) }
    }
}
