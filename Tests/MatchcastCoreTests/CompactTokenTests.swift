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
        #expect(Set([Self.apns, other, Self.apns.uppercased(), Self.apns].map(CompactToken.init)).count == 3)
    }

    @Test("its description is redacted, as a token in a log must be")
    func descriptionIsRedacted() {
        let described = "\(CompactToken(Self.apns))"
        #expect(described == Redact.token(Self.apns))
        #expect(!described.contains(Self.apns))
    }
}
