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
        let header = Self.base64URL(Array(#"{"alg":"ES256","kid":"\#(credentials.keyId)"}"#.utf8))
        let claims = Self.base64URL(Array(#"{"iss":"\#(credentials.teamId)","iat":\#(issuedAt)}"#.utf8))
        let signingInput = header + "." + claims
        let signature = try credentials.privateKey.signature(for: Array(signingInput.utf8))
        jwt = signingInput + "." + Self.base64URL(Array(signature.rawRepresentation))
        self.issuedAt = issuedAt
    }

    public var description: String { "APNsProviderToken(iat: \(issuedAt))" }
    public var debugDescription: String { description }

    /// Base64url (RFC 4648 §5) without padding, as JWS asks.
    public static func base64URL(_ bytes: [UInt8]) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes base64url with or without padding; nil when it is not base64url.
    public static func decodeBase64URL(_ text: some StringProtocol) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard standard.utf8.count % 4 != 1 else { return nil }
        while standard.utf8.count % 4 != 0 { standard.append("=") }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
