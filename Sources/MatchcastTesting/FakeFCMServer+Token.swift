import Foundation
import _CryptoExtras

extension FakeFCMServer.State {
    private static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    private static let grantType = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    /// The token endpoint: verify the assertion, then grant (or answer as scripted).
    func token(contentType: String?, body: [UInt8]) -> Reply {
        let form = Self.form(String(decoding: body, as: UTF8.self))
        let problem: String? =
            if contentType?.lowercased().hasPrefix("application/x-www-form-urlencoded") != true {
                "content-type is '\(contentType ?? "none")', not a form"
            } else if form["grant_type"] != Self.grantType {
                "grant_type is '\(form["grant_type"] ?? "none")'"
            } else if let assertion = form["assertion"] {
                verify(assertion: assertion)
            } else {
                "no assertion"
            }
        if let problem {
            return record(.token, Reply(status: 400, body: Self.oauthError("invalid_grant", problem)), problem: problem)
        }
        let (answer, expiresIn): (FakeFCMServer.TokenAnswer, Int) = locked { values in
            (values.tokenScript.isEmpty ? .grant : values.tokenScript.removeFirst(), values.expiresIn)
        }
        switch answer {
        case .unavailable:
            return record(.token, Reply(status: 503, body: Self.oauthError("temporarily_unavailable", "injected 503")), problem: nil)
        case .invalidGrant:
            return record(.token, Reply(status: 400, body: Self.oauthError("invalid_grant", "Invalid JWT Signature.")), problem: nil)
        case .grant:
            let value = "ya29.fake-" + UUID().uuidString.replacingOccurrences(of: "-", with: "")
            let expiry = now().addingTimeInterval(TimeInterval(expiresIn))
            locked { $0.granted[value] = expiry }
            let json = #"{"access_token":"\#(value)","expires_in":\#(expiresIn),"token_type":"Bearer"}"#
            return record(.token, Reply(status: 200, body: json), problem: nil)
        }
    }

    /// What is wrong with `assertion`, or nil when it is a good RS256 JWT of the service account for FCM.
    private func verify(assertion: String) -> String? {
        let parts = assertion.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let headerBytes = Self.base64URL(parts[0]), let claimBytes = Self.base64URL(parts[1]),
              let signature = Self.base64URL(parts[2]),
              let header = (try? JSONSerialization.jsonObject(with: Data(headerBytes))) as? [String: Any],
              let claims = (try? JSONSerialization.jsonObject(with: Data(claimBytes))) as? [String: Any]
        else { return "assertion is not a JWT" }
        guard header["alg"] as? String == "RS256" else { return "alg is not RS256" }
        guard header["typ"] == nil || header["typ"] as? String == "JWT" else { return "typ is not JWT" }
        let signingInput = Array("\(parts[0]).\(parts[1])".utf8)
        guard publicKey.isValidSignature(
            _RSA.Signing.RSASignature(rawRepresentation: signature), for: signingInput, padding: .insecurePKCS1v1_5)
        else { return "Invalid JWT Signature." }
        let port = locked { $0.port }
        guard claims["iss"] as? String == clientEmail else { return "iss is not the service account" }
        guard let scope = claims["scope"] as? String, scope.split(separator: " ").contains(Substring(Self.scope)) else {
            return "scope does not include firebase.messaging"
        }
        guard claims["aud"] as? String == "http://127.0.0.1:\(port)/token" else { return "aud is not this token endpoint" }
        guard let iat = (claims["iat"] as? NSNumber)?.int64Value, let exp = (claims["exp"] as? NSNumber)?.int64Value else {
            return "iat or exp missing"
        }
        let seconds = Int64(now().timeIntervalSince1970)
        guard exp > iat, exp - iat <= 3600 else { return "exp - iat is \(exp - iat), not 1 ... 3600" }
        guard iat <= seconds + 60 else { return "iat is in the future" }
        guard exp > seconds else { return "assertion expired" }
        return nil
    }

    /// `application/x-www-form-urlencoded` pairs.
    private static func form(_ text: String) -> [String: String] {
        var pairs: [String: String] = [:]
        for pair in text.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            let decode = { (part: Substring) in part.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? "" }
            pairs[decode(parts[0])] = decode(parts[1])
        }
        return pairs
    }

    /// Base64url without padding, as JWTs write it; nil for anything else.
    private static func base64URL(_ part: Substring) -> [UInt8]? {
        guard part.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-" || $0 == "_") }) else { return nil }
        var text = part.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text).map(Array.init)
    }

    private static func oauthError(_ error: String, _ description: String) -> String {
        let data = try! JSONSerialization.data(withJSONObject: ["error": error, "error_description": description], options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}
