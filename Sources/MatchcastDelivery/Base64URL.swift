import Foundation

/// Base64url (RFC 4648 §5) without padding, as JWS (APNs provider tokens, VAPID) and Web Push keys write it.
public enum Base64URL {
    public static func encode(_ bytes: some DataProtocol) -> String {
        var text = Data(bytes).base64EncodedString()
        text = text.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
        while text.hasSuffix("=") { text.removeLast() }
        return text
    }

    /// Decodes base64url with or without padding; nil when it is not base64url.
    public static func decode(_ text: some StringProtocol) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        guard standard.utf8.count % 4 != 1 else { return nil }
        while standard.utf8.count % 4 != 0 { standard.append("=") }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
