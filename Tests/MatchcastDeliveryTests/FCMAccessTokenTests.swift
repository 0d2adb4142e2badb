import AsyncHTTPClient
import Foundation
import Logging
import MatchcastDelivery
import MatchcastTesting
import Testing
import _CryptoExtras

/// The OAuth2 half of the FCM sink: the RS256 assertion, its exchange at a fake token endpoint that verifies it, the
/// cached token, its renewal, one exchange however many callers wait, and what a refusal or an outage does.
@Suite("FCM access tokens", .timeLimit(.minutes(2)))
struct FCMAccessTokenTests {
    private typealias F = FCMFixture

    private static func provider(
        server: FakeFCMServer, client: HTTPClient, key: _RSA.Signing.PrivateKey = F.key, wallClock: WallClock = WallClock(),
        clock: InstantClock = InstantClock(),
        retry: RetryPolicy = RetryPolicy(maxAttempts: 3, initialBackoff: .milliseconds(100), jitter: 0)
    ) throws -> FCMAccessTokenProvider {
        let account = try FCMServiceAccount(json: F.serviceAccountJSON(key: key, tokenURI: server.tokenURI))
        return FCMAccessTokenProvider(
            account: account, client: client, requestTimeout: .seconds(60), retry: retry, clock: clock, now: wallClock.now,
            logger: Logger(label: "test.fcm", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    @Test func theAssertionIsAnRS256JWTOfTheServiceAccount() throws {
        let account = try FCMServiceAccount(json: F.serviceAccountJSON(key: F.key, tokenURI: "https://oauth2.googleapis.com/token"))
        let assertion = try FCMAssertion(account: account, issuedAt: 1_776_784_329)
        let (header, claims, signature, signingInput) = try APNsFixture.decode(jwt: assertion.jwt)
        #expect(header["alg"] as? String == "RS256")
        #expect(header["typ"] as? String == "JWT")
        #expect(header["kid"] as? String == F.privateKeyId)
        #expect(claims["iss"] as? String == F.clientEmail)
        #expect(claims["scope"] as? String == "https://www.googleapis.com/auth/firebase.messaging")
        #expect(claims["aud"] as? String == "https://oauth2.googleapis.com/token")
        #expect(claims["iat"] as? Int == 1_776_784_329)
        #expect(claims["exp"] as? Int == 1_776_784_329 + 3600)
        #expect(signature.count == 256)
        let rsa = _RSA.Signing.RSASignature(rawRepresentation: signature)
        #expect(F.key.publicKey.isValidSignature(rsa, for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5))
        // The signature covers the claims: another issuer's claims do not verify with it.
        let forged = signingInput.split(separator: ".")[0] + "." + Base64URL.encode(Array(#"{"iss":"x@y"}"#.utf8))
        #expect(!F.key.publicKey.isValidSignature(rsa, for: Array(forged.utf8), padding: .insecurePKCS1v1_5))
        #expect(assertion.formBody == "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer&assertion=" + assertion.jwt)
        #expect(!"\(assertion)".contains(assertion.jwt.prefix(20)))
    }

    @Test func refreshTimesLeaveAMarginOrHalfTheLife() {
        let issued = Date(timeIntervalSince1970: 1_000_000)
        let hour = FCMAccessToken(value: "a", issuedAt: issued, expiresIn: 3599)
        #expect(hour.expiresAt == issued.addingTimeInterval(3599))
        #expect(hour.refreshAt == issued.addingTimeInterval(3299))
        let short = FCMAccessToken(value: "a", issuedAt: issued, expiresIn: 120)
        #expect(short.refreshAt == issued.addingTimeInterval(60))
        #expect(!"\(FCMAccessToken(value: "ya29.secret-value", issuedAt: issued, expiresIn: 60))".contains("secret"))
    }

    @Test func exchangesTheAssertionAndCachesTheToken() async throws {
        try await F.withServer { server, client in
            let provider = try Self.provider(server: server, client: client)
            let first = try await provider.token()
            #expect(first.value.hasPrefix("ya29.fake-"))
            #expect(server.grants == 1)
            #expect(server.problems.isEmpty)
            let again = try await provider.token()
            #expect(again == first)
            #expect(server.grants == 1)
            #expect(provider.grantsReceived == 1)
            #expect(provider.lastFailure == nil)
        }
    }

    @Test func aShortLivedTokenIsReplacedAtHalfItsLife() async throws {
        let wallClock = WallClock()
        try await F.withServer(expiresIn: 120, now: wallClock.now) { server, client in
            let provider = try Self.provider(server: server, client: client, wallClock: wallClock)
            let first = try await provider.token()
            wallClock.advance(seconds: 59)
            #expect(try await provider.token() == first)
            wallClock.advance(seconds: 2)
            let second = try await provider.token()
            #expect(second != first)
            #expect(server.grants == 2)
            #expect(second.issuedAt == first.issuedAt.addingTimeInterval(61))
            #expect(server.problems.isEmpty)
        }
    }

    @Test func oneExchangeForManyWaitingCallers() async throws {
        let wallClock = WallClock()
        try await F.withServer(expiresIn: 600, now: wallClock.now) { server, client in
            server.delayTokenAnswers(by: .milliseconds(300))
            let provider = try Self.provider(server: server, client: client, wallClock: wallClock)
            func many() async throws -> Set<String> {
                try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<20 { group.addTask { try await provider.token().value } }
                    return try await group.reduce(into: Set<String>()) { $0.insert($1) }
                }
            }
            let first = try await many()
            #expect(first.count == 1)
            #expect(server.grants == 1)
            // Past the refresh time (half of 600 s), again one exchange for all of them.
            wallClock.advance(seconds: 301)
            let second = try await many()
            #expect(second.count == 1)
            #expect(second != first)
            #expect(server.grants == 2)
            #expect(server.log.filter { $0.kind == .token }.count == 2)
        }
    }

    @Test func aRefusedTokenIsReplacedOnceForAllWhoSawItRefused() async throws {
        try await F.withServer { server, client in
            server.delayTokenAnswers(by: .milliseconds(200))
            let provider = try Self.provider(server: server, client: client)
            let refused = try await provider.token()
            let replacements = try await withThrowingTaskGroup(of: FCMAccessToken.self) { group in
                for _ in 0..<10 { group.addTask { try await provider.refresh(rejecting: refused) } }
                return try await group.reduce(into: Set<FCMAccessToken>()) { $0.insert($1) }
            }
            #expect(replacements.count == 1)
            #expect(!replacements.contains(refused))
            #expect(server.grants == 2)
            // A late report about the old token gets the new one, without another exchange.
            #expect(try await provider.refresh(rejecting: refused) == replacements.first)
            #expect(server.grants == 2)
        }
    }

    @Test func aRefusedGrantIsAClearConfigurationErrorWithoutRetries() async throws {
        try await F.withServer { server, client in
            server.scriptTokens([.invalidGrant])
            let clock = InstantClock()
            let provider = try Self.provider(server: server, client: client, clock: clock)
            let error = try #require(await #expect(throws: FCMError.self) { try await provider.token() })
            #expect(error.reason == "access_token_refused")
            #expect(error.isConfigurationError)
            #expect("\(error)".contains("invalid_grant"))
            #expect("\(error)".contains(F.clientEmail))
            #expect(clock.sleeps.isEmpty)
            #expect(server.log.filter { $0.kind == .token }.count == 1)
            #expect(provider.lastFailure != nil)
            // The next call tries again, and succeeds.
            _ = try await provider.token()
            #expect(provider.lastFailure == nil)
        }
    }

    @Test func anAssertionSignedWithAnotherKeyIsRefused() async throws {
        try await F.withServer { server, client in
            let stranger = try _RSA.Signing.PrivateKey(keySize: .bits2048)
            let provider = try Self.provider(server: server, client: client, key: stranger)
            let error = try #require(await #expect(throws: FCMError.self) { try await provider.token() })
            #expect(error.reason == "access_token_refused")
            #expect("\(error)".contains("Invalid JWT Signature."))
            #expect(server.grants == 0)
            #expect(server.problems == ["Invalid JWT Signature."])
        }
    }

    @Test func endpointOutagesAreRetriedWithBackoff() async throws {
        try await F.withServer { server, client in
            server.scriptTokens([.unavailable, .unavailable])
            let clock = InstantClock()
            let provider = try Self.provider(server: server, client: client, clock: clock)
            let current = try await provider.token()
            #expect(server.log.filter { $0.kind == .token }.map(\.status) == [503, 503, 200])
            #expect(clock.sleeps == [.milliseconds(100), .milliseconds(200)])

            // Three failures use up three attempts: the caller hears why.
            server.scriptTokens([.unavailable, .unavailable, .unavailable])
            let error = try #require(await #expect(throws: FCMError.self) { try await provider.refresh(rejecting: current) })
            #expect(server.grants == 1)
            #expect(error.reason == "access_token_unavailable")
            #expect(!error.isConfigurationError)
            #expect("\(error)".contains("HTTP 503"))
        }
    }
}
