import Foundation

/// An OAuth2 access token for FCM, as the token endpoint granted it, and when to replace it.
///
/// A credential until it expires: `description` shows only its times; never log `value`.
public struct FCMAccessToken: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    /// What goes after `Authorization: Bearer`.
    public let value: String
    public let issuedAt: Date
    /// `issuedAt + expires_in`: FCM refuses it (401) from then on.
    public let expiresAt: Date
    /// When a new one is fetched: 5 minutes before expiry, or at half its life when it lives under 10 minutes, so a
    /// send never goes out with a token about to lapse and a refresh has time to be retried.
    public let refreshAt: Date

    /// Replaced this long before expiry, for tokens living at least twice as long.
    public static let refreshMargin: TimeInterval = 5 * 60

    public init(value: String, issuedAt: Date, expiresIn: Int) {
        self.value = value
        self.issuedAt = issuedAt
        let lifetime = TimeInterval(expiresIn)
        expiresAt = issuedAt.addingTimeInterval(lifetime)
        let early = lifetime >= 2 * Self.refreshMargin ? lifetime - Self.refreshMargin : lifetime / 2
        refreshAt = issuedAt.addingTimeInterval(early)
    }

    /// Whether it should be replaced before use at `now`: its refresh time has come, or the wall clock went back
    /// before it was issued (a token "from the future" could be used past its expiry).
    func isDue(at now: Date) -> Bool {
        now >= refreshAt || now < issuedAt.addingTimeInterval(-60)
    }

    public var description: String {
        "FCMAccessToken(issuedAt: \(Int64(issuedAt.timeIntervalSince1970)), expiresAt: \(Int64(expiresAt.timeIntervalSince1970)))"
    }

    public var debugDescription: String { description }

    /// The most `expires_in` is believed: a longer one (Google grants an hour) is a broken or hostile endpoint.
    static let maxExpiresIn = 24 * 3600

    /// What a token endpoint said: a grant, or why not.
    enum Grant: Sendable, Equatable {
        case granted(value: String, expiresIn: Int)
        /// The endpoint refused the assertion for good (`invalid_grant`, `invalid_client`, …); `why` is its error
        /// and description, cut short.
        case refused(why: String)
        /// A 429 or 5xx: try again later.
        case unavailable(why: String)
    }

    /// Reads a token endpoint's answer (RFC 6749 §5.1, §5.2).
    static func grant(status: Int, body: [UInt8]) -> Grant {
        let object = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any]
        switch status {
        case 200:
            guard let object else { return .refused(why: "HTTP 200 without a JSON object") }
            guard let value = object["access_token"] as? String, !value.isEmpty, value.utf8.count <= 4096,
                  value.unicodeScalars.allSatisfy({ $0.isASCII && $0.value > 0x20 && $0.value < 0x7F })
            else { return .refused(why: "HTTP 200 without a usable access_token") }
            if let type = object["token_type"] as? String, type.lowercased() != "bearer" {
                return .refused(why: "token_type '\(type.prefix(20))', not Bearer")
            }
            guard let seconds = (object["expires_in"] as? NSNumber)?.doubleValue, seconds.isFinite, seconds >= 1 else {
                return .refused(why: "HTTP 200 without a positive expires_in")
            }
            return .granted(value: value, expiresIn: Int(min(seconds, Double(maxExpiresIn))))
        case 429, 500..<600:
            return .unavailable(why: "HTTP \(status)\(explanation(object))")
        default:
            return .refused(why: "HTTP \(status)\(explanation(object))")
        }
    }

    /// `: invalid_grant (Invalid JWT Signature.)` from an RFC 6749 error body; empty when there is none.
    private static func explanation(_ object: [String: Any]?) -> String {
        guard let error = object?["error"] as? String else { return "" }
        let description = (object?["error_description"] as? String).map { " (\($0.prefix(200)))" } ?? ""
        return ": \(error.prefix(60))\(description)"
    }
}
