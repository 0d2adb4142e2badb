import Crypto
import Foundation

/// Voluntary application server identification for Web Push (RFC 8292): who sends, proved by an ES256-signed JWT
/// for the push service's origin, in `Authorization: vapid t=<JWT>, k=<public key>`. The same key pair is the
/// `applicationServerKey` the web app subscribes with, so a push service accepts pushes only from its holder.
public struct VAPIDCredentials: Sendable {
    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// The contact is not a `mailto:` or `https:` URI.
        case badSubject
        /// The endpoint has no `https` scheme and host to take an origin from (`http` only on a loopback host).
        case badEndpoint

        public var description: String {
            switch self {
            case .badSubject: "the VAPID subject must be a mailto: or https: URI (a contact for the push service)"
            case .badEndpoint: "a Web Push endpoint must be an https URL with a host (http only for a local test server on 127.0.0.1 or localhost)"
            }
        }
    }

    /// The longest a token may live (RFC 8292 §2: no more than 24 hours).
    public static let maximumLifetime: Duration = .seconds(24 * 3600)

    public let privateKey: P256.Signing.PrivateKey
    /// The `sub` claim: a contact for the push service's operator.
    public let subject: String

    public init(privateKey: P256.Signing.PrivateKey, subject: String) throws(Failure) {
        guard subject.hasPrefix("mailto:") && subject.count > 7 || subject.hasPrefix("https://") && subject.count > 8,
              subject.utf8.count <= 256, !subject.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "\\" })
        else { throw .badSubject }
        self.privateKey = privateKey
        self.subject = subject
    }

    /// The public key as a web app's `applicationServerKey` takes it and the header's `k` carries it: base64url of
    /// the 65-byte uncompressed point.
    public var publicKey: String { Base64URL.encode(privateKey.publicKey.x963Representation) }

    /// The `Authorization` header value for a push to `endpoint`: a token for the endpoint's origin expiring
    /// `lifetime` after `now` (at most 24 hours), and when it expires. One token serves every push to that origin
    /// until then.
    public func authorization(
        for endpoint: URL, now: Date, lifetime: Duration = .seconds(12 * 3600)
    ) throws(Failure) -> (value: String, expiresAt: Date) {
        let audience = try Self.origin(of: endpoint)
        let expiry = Int64(now.timeIntervalSince1970) + min(lifetime, Self.maximumLifetime).components.seconds
        let header = Base64URL.encode(Data(#"{"typ":"JWT","alg":"ES256"}"#.utf8))
        // The audience is an origin and the subject was checked: neither needs JSON escaping.
        let claims = Base64URL.encode(Data(#"{"aud":"\#(audience)","exp":\#(expiry),"sub":"\#(subject)"}"#.utf8))
        let signingInput = header + "." + claims
        // Cannot fail: signing with a valid P-256 key.
        let signature = try! privateKey.signature(for: Data(signingInput.utf8))
        let token = signingInput + "." + Base64URL.encode(signature.rawRepresentation)
        return ("vapid t=\(token), k=\(publicKey)", Date(timeIntervalSince1970: TimeInterval(expiry)))
    }

    /// `https://host[:port]`, the port only when it is not the scheme's default (an IPv6 host in brackets).
    ///
    /// `http` is taken only for a loopback host (`127.0.0.1`, `localhost`, `::1`): a push service on the same
    /// machine, as tests run one; a real push service is always https.
    static func origin(of endpoint: URL) throws(Failure) -> String {
        guard let scheme = endpoint.scheme?.lowercased(), let host = endpoint.host, !host.isEmpty,
              host.unicodeScalars.allSatisfy({ $0.isASCII && $0 != "\"" && $0 != "\\" }),
              scheme == "https" || scheme == "http" && isLoopback(host)
        else { throw .badEndpoint }
        let defaultPort = scheme == "https" ? 443 : 80
        let port = endpoint.port.flatMap { $0 == defaultPort ? nil : ":\($0)" } ?? ""
        let name = host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
        return "\(scheme)://\(name.lowercased())\(port)"
    }

    /// `127.0.0.1`, `localhost` or `::1` (with or without brackets): hosts that never leave the machine.
    static func isLoopback(_ host: String) -> Bool {
        ["127.0.0.1", "localhost", "::1", "[::1]"].contains(host.lowercased())
    }
}
