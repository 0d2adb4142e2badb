import Crypto
import Foundation
import Testing

@testable import MatchcastDelivery

/// RFC 8292: the `Authorization: vapid` header a push service checks.
@Suite("VAPID (RFC 8292)")
struct VAPIDTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func theHeaderCarriesATokenForTheEndpointsOriginSignedByTheKeyItNames() throws {
        let key = P256.Signing.PrivateKey()
        let credentials = try VAPIDCredentials(privateKey: key, subject: "mailto:push@example.com")
        let endpoint = try #require(URL(string: "https://updates.push.services.mozilla.com/wpush/v2/gAAAAABk?x=1"))
        let (value, expiresAt) = try credentials.authorization(for: endpoint, now: Self.now)
        #expect(expiresAt == Self.now.addingTimeInterval(12 * 3600))

        // `vapid t=<header.claims.signature>, k=<public key>`
        let parts = value.split(separator: " ", maxSplits: 1)
        #expect(parts.first == "vapid")
        let fields = Dictionary(uniqueKeysWithValues: try #require(parts.last).split(separator: ",").map { field in
            let pair = field.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
            return (String(pair[0]), String(pair[1]))
        })
        let k = try #require(fields["k"])
        #expect(k == credentials.publicKey)
        #expect(Base64URL.decode(k).map { Data($0) } == key.publicKey.x963Representation)
        let jwt = try #require(fields["t"]).split(separator: ".")
        try #require(jwt.count == 3)
        func part(_ index: Int) throws -> Data {
            let bytes = try #require(Base64URL.decode(jwt[index]), "JWT part \(index) is not base64url")
            return Data(bytes)
        }
        let header = try JSONSerialization.jsonObject(with: part(0)) as? [String: String]
        #expect(header == ["typ": "JWT", "alg": "ES256"])
        let decodedClaims = try JSONSerialization.jsonObject(with: part(1)) as? [String: Any]
        let claims = try #require(decodedClaims)
        #expect(claims["aud"] as? String == "https://updates.push.services.mozilla.com")
        #expect(claims["sub"] as? String == "mailto:push@example.com")
        #expect(claims["exp"] as? Int == 1_800_000_000 + 12 * 3600)
        // The signature verifies with the public key the header names, over `header.claims`.
        let signature = try P256.Signing.ECDSASignature(rawRepresentation: part(2))
        let keyBytes = try #require(Base64URL.decode(k))
        let named = try P256.Signing.PublicKey(x963Representation: keyBytes)
        #expect(named.isValidSignature(signature, for: Data("\(jwt[0]).\(jwt[1])".utf8)))
        #expect(!named.isValidSignature(signature, for: Data("\(jwt[0]).\(jwt[0])".utf8)))
    }

    @Test func aCachedTokenServesItsOriginUntilAnHourBeforeItExpires() throws {
        let credentials = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "mailto:push@example.com")
        let cache = VAPIDTokenCache(vapid: credentials)
        let mozilla = try #require(URL(string: "https://updates.push.services.mozilla.com/wpush/v2/a"))
        let mozillaOther = try #require(URL(string: "https://updates.push.services.mozilla.com/wpush/v2/b"))
        let apple = try #require(URL(string: "https://web.push.apple.com/QGuQ"))
        let first = try cache.authorization(for: mozilla, now: Self.now)
        // Another subscription of the same push service, later: the same token.
        #expect(try cache.authorization(for: mozillaOther, now: Self.now.addingTimeInterval(10 * 3600)) == first)
        #expect(cache.tokensSigned == 1)
        // Another push service: a token of its own, for its origin.
        let forApple = try cache.authorization(for: apple, now: Self.now)
        #expect(forApple != first && cache.tokensSigned == 2)
        // Under an hour left of the 12: a new token, valid for 12 hours from then.
        let renewed = try cache.authorization(for: mozilla, now: Self.now.addingTimeInterval(11.5 * 3600))
        #expect(renewed != first && cache.tokensSigned == 3)
        let claims = try #require(Self.claims(of: renewed))
        #expect(claims["aud"] as? String == "https://updates.push.services.mozilla.com")
        #expect(claims["exp"] as? Int == 1_800_000_000 + Int(11.5 * 3600) + 12 * 3600)
        #expect(try cache.authorization(for: mozilla, now: Self.now.addingTimeInterval(12 * 3600)) == renewed)
        // A bad endpoint is refused as without the cache.
        #expect(throws: VAPIDCredentials.Failure.badEndpoint) {
            try cache.authorization(for: try #require(URL(string: "http://push.example.com/x")), now: Self.now)
        }
    }

    /// The claims of the JWT in an `Authorization: vapid t=…, k=…` value.
    static func claims(of value: String) -> [String: Any]? {
        guard let token = value.split(separator: " ").first(where: { $0.hasPrefix("t=") })?.dropFirst(2).split(separator: ","),
              let jwt = token.first?.split(separator: "."), jwt.count == 3, let bytes = Base64URL.decode(jwt[1])
        else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(bytes)) as? [String: Any]
    }

    @Test func aTokenNeverLivesLongerThanADay() throws {
        let credentials = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "https://example.com/contact")
        let endpoint = try #require(URL(string: "https://web.push.apple.com/QGuQyavXutnMH"))
        let (_, expiresAt) = try credentials.authorization(for: endpoint, now: Self.now, lifetime: .seconds(48 * 3600))
        #expect(expiresAt == Self.now.addingTimeInterval(24 * 3600))
    }

    @Test(arguments: [
        ("https://fcm.googleapis.com/fcm/send/abc", "https://fcm.googleapis.com"),
        ("https://Push.Example.NET:8443/p/1", "https://push.example.net:8443"),
        ("https://push.example.net:443/p/1", "https://push.example.net"),
        ("https://[::1]:8443/p", "https://[::1]:8443"),
        // A push service on this machine (a test's) may be plain http.
        ("http://127.0.0.1:8080/push/1", "http://127.0.0.1:8080"),
        ("http://localhost/push/1", "http://localhost"),
    ])
    func theAudienceIsTheEndpointsOrigin(_ endpoint: String, _ origin: String) throws {
        #expect(try VAPIDCredentials.origin(of: try #require(URL(string: endpoint))) == origin)
    }

    @Test func badSubjectsAndEndpointsAreRefused() throws {
        let key = P256.Signing.PrivateKey()
        for subject in ["push@example.com", "mailto:", "http://example.com", "mailto:a\"b@example.com", "mailto:a b@example.com"] {
            #expect(throws: VAPIDCredentials.Failure.badSubject, "\(subject)") {
                try VAPIDCredentials(privateKey: key, subject: subject)
            }
        }
        let credentials = try VAPIDCredentials(privateKey: key, subject: "mailto:push@example.com")
        for endpoint in ["http://push.example.net/p", "http://10.0.0.1:8080/p", "https:///p", "file:///etc/passwd"] {
            let url = try #require(URL(string: endpoint))
            #expect(throws: VAPIDCredentials.Failure.badEndpoint, "\(endpoint)") {
                try credentials.authorization(for: url, now: Self.now)
            }
        }
    }
}
