import Crypto
import Foundation
import _CryptoExtras

/// The signed JWT a service account exchanges for an access token (Google, "Using OAuth 2.0 for Server to Server
/// Applications"; RFC 7523): header `{"alg":"RS256","typ":"JWT","kid":PRIVATE_KEY_ID}`, claims `iss` (the account),
/// `scope` (FCM's), `aud` (the token endpoint), `iat` and `exp` (an hour later, the longest Google accepts), signed
/// RSASSA-PKCS1-v1_5 over SHA-256 of `header.claims`.
///
/// The assertion is a credential for its hour: `description` shows only its times; never log `jwt`.
public struct FCMAssertion: Sendable, CustomStringConvertible, CustomDebugStringConvertible {
    /// The scope FCM's HTTP v1 API needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// `exp - iat`: Google refuses assertions meant to live longer than an hour.
    public static let lifetime: Int64 = 3600
    /// The `grant_type` of the exchange.
    public static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// `header.claims.signature`, each part base64url without padding.
    public let jwt: String
    public let issuedAt: Int64
    public let expiresAt: Int64

    private struct Header: Encodable {
        var alg = "RS256"
        var typ = "JWT"
        var kid: String?
    }

    private struct Claims: Encodable {
        var iss: String
        var scope: String
        var aud: String
        var iat: Int64
        var exp: Int64
    }

    /// Signs an assertion for `account` issued at `issuedAt` (Unix seconds).
    public init(account: FCMServiceAccount, issuedAt: Int64) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let header = try encoder.encode(Header(kid: account.privateKeyId))
        let claims = try encoder.encode(Claims(
            iss: account.clientEmail, scope: Self.scope, aud: account.tokenURI, iat: issuedAt,
            exp: issuedAt + Self.lifetime))
        let signingInput = Base64URL.encode(header) + "." + Base64URL.encode(claims)
        let signature = try account.privateKey.signature(for: Array(signingInput.utf8), padding: .insecurePKCS1v1_5)
        jwt = signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        self.issuedAt = issuedAt
        expiresAt = issuedAt + Self.lifetime
    }

    /// The form body of the exchange: `grant_type=…&assertion=…`, the grant type's colons percent-encoded. The JWT is
    /// base64url and dots: nothing in it to escape.
    public var formBody: String {
        "grant_type=" + Self.grantType.replacingOccurrences(of: ":", with: "%3A") + "&assertion=" + jwt
    }

    public var description: String { "FCMAssertion(iat: \(issuedAt), exp: \(expiresAt))" }
    public var debugDescription: String { description }
}
