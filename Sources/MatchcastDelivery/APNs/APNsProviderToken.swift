import Crypto
import Foundation

/// One provider token: the ES256-signed JWT APNs accepts as `authorization: bearer <jwt>`, and the
/// Unix second it claims to have been issued at.
///
/// The JWT is a credential for an hour: `description` shows only `iat`; never log `jwt`.
public struct APNsProviderToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// `header.claims.signature`, each part base64url without padding.
    public let jwt: String
    /// The `iat` claim.
    public let issuedAt: Int64

    /// Signs a token for `credentials` issued at `issuedAt`:
    /// header `{"alg":"ES256","kid":KEY_ID}`, claims `{"iss":TEAM_ID,"iat":SECONDS}`, and the raw
    /// 64-byte `r‖s` ECDSA P-256 signature over SHA-256 of `header.claims`.
    public init(credentials: APNsCredentials, issuedAt: Int64) throws {
        // The ids are ASCII letters and digits (checked by APNsCredentials), so no JSON escaping is needed.
        let header = Base64URL.encode(Array(#"{"alg":"ES256","kid":"\#(credentials.keyId)"}"#.utf8))
        let claims = Base64URL.encode(Array(#"{"iss":"\#(credentials.teamId)","iat":\#(issuedAt)}"#.utf8))
        let signingInput = header + "." + claims
        let signature = try credentials.privateKey.signature(for: Array(signingInput.utf8))
        jwt = signingInput + "." + Base64URL.encode(Array(signature.rawRepresentation))
        self.issuedAt = issuedAt
    }

    public var description: String { "APNsProviderToken(iat: \(issuedAt))" }
    public var debugDescription: String { description }
}
