import Foundation
@testable import MatchcastCore
import Testing

@Suite("CompactToken: an APNs token kept in its 32 bytes, any other token as its string")
struct CompactTokenTests {
    static let apns = "80f1c2a0d9e3b4f5a6c7d8e9f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f809"

    @Test("64 lowercase hex digits are kept as digits and come back as the same string")
    func hexDigitsRoundTrip() {
        for text in [Self.apns, String(repeating: "0", count: 64), String(repeating: "f", count: 64)] {
            let token = CompactToken(text)
            #expect(token.isHexDigits)
            #expect(token.string == text)
            #expect(token == CompactToken(String(text)))
        }
    }

    @Test("every digit in every place comes back as it went in")
    func everyDigitInEveryPlace() {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef")
        var texts = (0..<16).map { shift in String((0..<64).map { digits[($0 + shift) % 16] }) }
        texts += (0..<200).map { _ in String((0..<64).map { _ in digits[Int(generator.next() % 16)] }) }
        for text in texts {
            let token = CompactToken(text)
            #expect(token.isHexDigits)
            #expect(token.string == text)
            #expect(token.withUTF8 { String(decoding: $0, as: UTF8.self) } == text)
        }
    }

    @Test(
        "anything else is kept as it is",
        arguments: [
            String(Self.apns.dropLast()),  // 63 digits
            Self.apns + "0",  // 65
            Self.apns.uppercased(),
            "g" + Self.apns.dropFirst(),
            "fcm:dGhpcyBpcyBhbiBGQ00gcmVnaXN0cmF0aW9uIHRva2Vu",
            "",
            "é" + Self.apns.dropFirst(2),  // 64 bytes, not all hex
        ])
    func otherTextIsKeptAsText(_ text: String) {
        let token = CompactToken(text)
        #expect(!token.isHexDigits)
        #expect(token.string == text)
        #expect(token == CompactToken(String(text)))
    }

    @Test("two tokens are equal, and hash alike, exactly when their strings are")
    func equalityFollowsTheString() {
        let other = String(Self.apns.dropLast()) + "8"
        #expect(CompactToken(Self.apns) == CompactToken(String(Self.apns)))
        #expect(CompactToken(Self.apns).hashValue == CompactToken(String(Self.apns)).hashValue)
        #expect(CompactToken(Self.apns) != CompactToken(other))
        #expect(CompactToken(Self.apns) != CompactToken(Self.apns.uppercased()), "upper case is another token")
        #expect(Set([Self.apns, other, Self.apns.uppercased(), Self.apns].map { CompactToken($0) }).count == 3)
    }

    @Test(
        "its bytes and its JSON string are the string's, whichever way it is kept",
        arguments: [Self.apns, String(repeating: "0", count: 64), Self.apns.uppercased(), #"{"endpoint":"https://x/é","k":"\"}"#, ""])
    func writtenOutAsItsString(_ text: String) throws {
        let token = CompactToken(text)
        #expect(token.withUTF8 { Array($0) } == Array(text.utf8))
        #expect(token.utf8Count == text.utf8.count)
        var written: [UInt8] = [UInt8(ascii: "[")]
        token.appendJSONString(to: &written)
        var expected: [UInt8] = [UInt8(ascii: "[")]
        JSONText.appendString(text, to: &expected)
        #expect(written == expected)
        #expect(try JSONDecoder().decode(String.self, from: Data(written.dropFirst())) == text)
    }

    @Test("a delivery's target keeps an APNs token as digits and still encodes, decodes and compares as its string")
    func pushTargetKeepsTheDigits() throws {
        let target = PushTarget(kind: .updateToken, value: Self.apns)
        #expect(target.token.isHexDigits)
        #expect(target.value == Self.apns)
        #expect(target == PushTarget(kind: .updateToken, token: CompactToken(Self.apns)))
        #expect(target != PushTarget(kind: .pushToStartToken, value: Self.apns))
        let json = try JSONEncoder().encode(target)
        let object = try JSONSerialization.jsonObject(with: json) as? [String: String]
        #expect(object == ["kind": "updateToken", "value": Self.apns])
        #expect(try JSONDecoder().decode(PushTarget.self, from: json) == target)
        // A fan-out holds a window of deliveries: the target's kind sits in the room after the token's 33 bytes.
        #expect(MemoryLayout<PushTarget>.size == 34)
        #expect(MemoryLayout<Delivery>.stride == 80)
    }

    @Test("an APNs token is never a direct address; an FCM or Web Push activity token is, kept or as a string")
    func directAddressesOfKeptTokens() {
        let fcm = DirectAddress.fcm("dGhpcyBpcyBhbiBGQ00gcmVnaXN0cmF0aW9uIHRva2Vu").activityToken(for: "act_1")
        #expect(!DirectAddress.isDirect(CompactToken(Self.apns)))
        #expect(DirectAddress(activityToken: CompactToken(Self.apns)) == nil)
        #expect(DirectAddress.isDirect(CompactToken(fcm)) == DirectAddress.isDirect(fcm))
        #expect(DirectAddress(activityToken: CompactToken(fcm)) == DirectAddress(activityToken: fcm))
        #expect(DirectAddress(activityToken: CompactToken(fcm)) != nil)
    }

    @Test("its description is redacted, as a token in a log must be")
    func descriptionIsRedacted() {
        let described = "\(CompactToken(Self.apns))"
        #expect(described == Redact.token(Self.apns))
        #expect(!described.contains(Self.apns))
    }
}
