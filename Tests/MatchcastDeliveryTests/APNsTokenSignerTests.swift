import Crypto
import Foundation
import MatchcastDelivery
import MatchcastTesting
import Testing

/// Provider tokens: their shape, their signature, and when they are replaced. The wall clock is a
/// test clock, so "an hour later" takes no time.
@Suite("APNs provider tokens", .timeLimit(.minutes(1)))
struct APNsTokenSignerTests {
    private typealias F = APNsFixture

    @Test func jwtHasTheES256HeaderTheClaimsAndARawSignatureThatVerifies() throws {
        let (key, credentials) = try F.credentials()
        let token = try APNsProviderToken(credentials: credentials, issuedAt: 1_776_784_329)
        #expect(token.issuedAt == 1_776_784_329)
        #expect(!token.jwt.contains("=") && !token.jwt.contains("+") && !token.jwt.contains("/"))

        let parts = token.jwt.split(separator: ".", omittingEmptySubsequences: false)
        #expect(parts.count == 3)
        #expect(Base64URL.decode(parts[0]) == Array(#"{"alg":"ES256","kid":"ABC123DEFG"}"#.utf8))
        #expect(Base64URL.decode(parts[1]) == Array(#"{"iss":"DEF123GHIJ","iat":1776784329}"#.utf8))

        let decoded = try F.decode(jwt: token.jwt)
        #expect(decoded.header as? [String: String] == ["alg": "ES256", "kid": F.keyId])
        #expect(decoded.claims["iss"] as? String == F.teamId)
        #expect((decoded.claims["iat"] as? NSNumber)?.int64Value == 1_776_784_329)
        // JWS ES256 is r‖s, 32 bytes each, not DER.
        #expect(decoded.signature.count == 64)
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: decoded.signature)
        #expect(key.publicKey.isValidSignature(signature, for: Array(decoded.signingInput.utf8)))
        // Another key's public half does not verify it.
        #expect(!P256.Signing.PrivateKey().publicKey.isValidSignature(signature, for: Array(decoded.signingInput.utf8)))
        // Nor does a changed claim.
        #expect(!key.publicKey.isValidSignature(signature, for: Array((decoded.signingInput + "x").utf8)))
    }

    @Test func theTokenIsReusedUntilTheRefreshIntervalAndReplacedAtIt() throws {
        let (_, credentials) = try F.credentials()
        let clock = WallClock()
        let signer = try APNsTokenSigner(credentials: credentials, now: clock.now)
        #expect(signer.refreshInterval == .seconds(50 * 60))

        let first = try signer.currentToken()
        #expect(first.issuedAt == Int64(clock.now().timeIntervalSince1970))
        for _ in 0..<49 {
            clock.advance(seconds: 60)
            #expect(try signer.currentToken() == first)
        }
        clock.advance(seconds: 59)
        #expect(try signer.currentToken() == first)
        clock.advance(seconds: 1)
        let second = try signer.currentToken()
        #expect(second != first)
        #expect(second.issuedAt == first.issuedAt + 50 * 60)
        #expect(signer.tokensIssued == 2)
    }

    @Test func refreshIntervalMustLieBetween20And60Minutes() throws {
        let (_, credentials) = try F.credentials()
        for minutes in [0, 5, 19, 60, 61, 120] {
            #expect(throws: APNsError.self) { try APNsTokenSigner(credentials: credentials, refreshInterval: .seconds(minutes * 60)) }
        }
        let clock = WallClock()
        // The shortest allowed: never sooner than 20 minutes.
        let eager = try APNsTokenSigner(credentials: credentials, refreshInterval: APNsTokenSigner.minimumRefreshInterval, now: clock.now)
        let first = try eager.currentToken()
        clock.advance(seconds: 20 * 60 - 1)
        #expect(try eager.currentToken() == first)
        clock.advance(seconds: 1)
        #expect(try eager.currentToken() != first)
        // The longest allowed: always before the token is an hour old.
        let lazy = try APNsTokenSigner(credentials: credentials, refreshInterval: .seconds(60 * 60 - 1), now: clock.now)
        let old = try lazy.currentToken()
        clock.advance(seconds: 60 * 60 - 1)
        let fresh = try lazy.currentToken()
        #expect(fresh != old)
        #expect(fresh.issuedAt - old.issuedAt < 3600)
    }

    @Test func expiredProviderTokenForcesOneRefreshWhateverTheAge() throws {
        let (_, credentials) = try F.credentials()
        let clock = WallClock()
        let signer = try APNsTokenSigner(credentials: credentials, now: clock.now)
        let first = try signer.currentToken()
        clock.advance(seconds: 120)

        // APNs refused the current token: replaced at once, though only 2 minutes old.
        let second = try #require(try signer.refresh(rejecting: first))
        #expect(second != first)
        #expect(try signer.currentToken() == second)
        // Other requests refused with the same old token get the replacement, not another one.
        #expect(try signer.refresh(rejecting: first) == second)
        #expect(signer.tokensIssued == 2)
        // A replacement refused at once is not replaced again: that is the key or the clock, not age.
        #expect(try signer.refresh(rejecting: second) == nil)
        #expect(signer.tokensIssued == 2)
        clock.advance(seconds: 60)
        let third = try #require(try signer.refresh(rejecting: second))
        #expect(third != second)
        #expect(signer.tokensIssued == 3)
    }

    @Test func badKeysFailClearlyWithoutEchoingTheKey() throws {
        let p384 = P384.Signing.PrivateKey().pemRepresentation
        let secretLine = try #require(p384.split(separator: "\n").dropFirst().first.map(String.init))
        let cases: [(String, String)] = [
            (p384, "not a P-256"),
            ("-----BEGIN PRIVATE KEY-----\n\(secretLine)\n-----END PRIVATE KEY-----", "not a P-256"),
            (secretLine, "not a PEM private key"),
            ("", "not a PEM private key"),
        ]
        for (pem, expected) in cases {
            do throws(APNsError) {
                _ = try APNsCredentials(keyPEM: pem, keyId: F.keyId, teamId: F.teamId)
                Issue.record("accepted a bad key")
            } catch {
                #expect(error.reason == "key")
                #expect(error.description.contains(expected), "\(error.description)")
                #expect(!error.description.contains(secretLine))
            }
        }

        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("matchcast-apns-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("AuthKey_ABC123DEFG.p8")
        try Data(p384.utf8).write(to: file)
        do throws(APNsError) {
            _ = try APNsCredentials(keyFile: file.path, keyId: F.keyId, teamId: F.teamId)
            Issue.record("accepted a P-384 key file")
        } catch {
            #expect(error.description.contains(file.path) && error.description.contains("not a P-256"))
            #expect(!error.description.contains(secretLine))
        }
        let missing = directory.appendingPathComponent("missing.p8").path
        #expect(throws: APNsError.self) { try APNsCredentials(keyFile: missing, keyId: F.keyId, teamId: F.teamId) }

        // A good key file loads, and nothing that prints the credentials shows the key.
        let key = P256.Signing.PrivateKey()
        try Data(key.pemRepresentation.utf8).write(to: file)
        let credentials = try APNsCredentials(keyFile: file.path, keyId: F.keyId, teamId: F.teamId)
        #expect(credentials.publicKey.rawRepresentation == key.publicKey.rawRepresentation)
        let keyLine = try #require(key.pemRepresentation.split(separator: "\n").dropFirst().first.map(String.init))
        for text in ["\(credentials)", String(reflecting: credentials), "\(Mirror(reflecting: credentials).children.map(\.value))"] {
            #expect(!text.contains(keyLine))
        }
        let configuration = APNsSinkConfiguration(key: .pem(key.pemRepresentation), keyId: F.keyId, teamId: F.teamId)
        #expect(!"\(configuration)".contains(keyLine))

        #expect(throws: APNsError.self) { try APNsCredentials(privateKey: key, keyId: "", teamId: F.teamId) }
        #expect(throws: APNsError.self) { try APNsCredentials(privateKey: key, keyId: F.keyId, teamId: #"X","iat":0"#) }
    }

    @Test func apnsIdIsAStableUUIDPerDelivery() {
        let id = APNsNotificationID.uuid(forDeliveryId: "dlv_01J000")
        #expect(id == APNsNotificationID.uuid(forDeliveryId: "dlv_01J000"))
        #expect(id != APNsNotificationID.uuid(forDeliveryId: "dlv_01J001"))
        #expect(UUID(uuidString: id) != nil)
        #expect(id == id.lowercased() && id.count == 36)
        let characters = Array(id)
        #expect(characters[14] == "8")
        #expect("89ab".contains(characters[19]))
    }
}
