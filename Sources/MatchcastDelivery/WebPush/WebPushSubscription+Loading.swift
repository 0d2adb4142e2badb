import Crypto
import Foundation

extension WebPushMessage.Subscription {
    /// A subscription file larger than this is not a `PushSubscription` (real ones are a few hundred bytes).
    public static let maximumFileBytes = 16 * 1024

    /// Reads what a browser's `PushSubscription.toJSON()` gives:
    /// `{"endpoint": "https://…", "expirationTime": null, "keys": {"p256dh": "<base64url>", "auth": "<base64url>"}}`.
    ///
    /// Checked here, so that a bad file is an error at start and not a failed first push: the endpoint is an https
    /// URL with a host (http only on 127.0.0.1 / localhost, for a push service on this machine), `p256dh` is an
    /// uncompressed P-256 point (65 bytes, on the curve), `auth` is 16 bytes, and an `expirationTime` (milliseconds
    /// since 1970) has not passed by `now`.
    ///
    /// - Parameter source: names the input in messages (a file path).
    public init(json: some DataProtocol, source: String = "the subscription", now: Date = Date()) throws(WebPushSetupError) {
        func fail(_ what: String) -> WebPushSetupError {
            WebPushSetupError(.subscription, "\(source): \(what)")
        }
        let object: [String: Any]
        do {
            guard let parsed = try JSONSerialization.jsonObject(with: Data(json)) as? [String: Any] else {
                throw fail("not a JSON object; expected PushSubscription.toJSON(): {\"endpoint\": …, \"keys\": {\"p256dh\": …, \"auth\": …}}")
            }
            object = parsed
        } catch let error as WebPushSetupError {
            throw error
        } catch {
            throw fail("not JSON; expected what the browser's PushSubscription.toJSON() gives")
        }
        guard let endpointText = object["endpoint"] as? String, !endpointText.isEmpty else {
            throw fail("no \"endpoint\" (the push service URL the browser's subscription gives)")
        }
        guard endpointText.utf8.count <= 2048, !endpointText.contains(where: \.isWhitespace),
              let endpoint = URL(string: endpointText), endpoint.host?.isEmpty == false,
              endpoint.user == nil, endpoint.password == nil
        else { throw fail("\"endpoint\" is not a URL with a host") }
        guard (try? VAPIDCredentials.origin(of: endpoint)) != nil else {
            let scheme = endpoint.scheme.map { "'\($0.prefix(10))'" } ?? "none"
            throw fail("\"endpoint\" must be https (its scheme is \(scheme)); http is taken only for a test server on 127.0.0.1 or localhost")
        }
        switch object["expirationTime"] {
        case nil, is NSNull:
            break
        case let milliseconds as NSNumber:
            let expiry = Date(timeIntervalSince1970: milliseconds.doubleValue / 1000)
            guard expiry > now else {
                throw fail("the subscription expired at \(ISO8601DateFormatter().string(from: expiry)); subscribe again in the browser")
            }
        default:
            throw fail("\"expirationTime\" is neither null nor a number of milliseconds")
        }
        guard let keys = object["keys"] as? [String: Any] else {
            throw fail("no \"keys\" object (p256dh and auth); was the subscription saved with JSON.stringify(subscription)?")
        }
        guard let p256dhText = keys["p256dh"] as? String, let p256dh = Base64URL.decode(p256dhText) else {
            throw fail("\"keys.p256dh\" is missing or not base64url")
        }
        guard p256dh.count == 65, p256dh.first == 0x04,
              (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil
        else {
            throw fail("\"keys.p256dh\" is not an uncompressed P-256 public key (\(p256dh.count) bytes; a browser's is 65, starting 0x04, on the curve)")
        }
        guard let authText = keys["auth"] as? String, let auth = Base64URL.decode(authText) else {
            throw fail("\"keys.auth\" is missing or not base64url")
        }
        guard auth.count == 16 else {
            throw fail("\"keys.auth\" is \(auth.count) bytes; a browser's auth secret is 16")
        }
        self.init(endpoint: endpoint, p256dh: Data(p256dh), auth: Data(auth))
    }

    /// Reads and checks a subscription file (`init(json:source:now:)`).
    public static func load(file path: String, now: Date = Date()) throws(WebPushSetupError) -> Self {
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: maximumFileBytes + 1) ?? Data()
        } catch {
            throw WebPushSetupError(.subscription, "cannot read the subscription file \(path): \(error.localizedDescription)")
        }
        guard data.count <= maximumFileBytes else {
            throw WebPushSetupError(.subscription, "\(path): more than \(maximumFileBytes / 1024) KB; not a PushSubscription")
        }
        return try Self(json: data, source: path, now: now)
    }

    /// `scheme://host[:port]` of the endpoint: the only part of it fit for logs and errors, since its path is the
    /// subscription's capability.
    public var origin: String {
        (try? VAPIDCredentials.origin(of: endpoint)) ?? "\(endpoint.scheme ?? "?")://\(endpoint.host ?? "?")"
    }

    /// Whether the keys are usable: what the sink checks of a subscription made in code rather than loaded.
    func validated() throws(WebPushSetupError) -> Self {
        guard (try? VAPIDCredentials.origin(of: endpoint)) != nil else {
            throw WebPushSetupError(.subscription, "the subscription's endpoint (\(origin)) must be https (http only on 127.0.0.1 or localhost)")
        }
        guard p256dh.count == 65, p256dh.first == 0x04, (try? P256.KeyAgreement.PublicKey(x963Representation: p256dh)) != nil else {
            throw WebPushSetupError(.subscription, "the subscription's p256dh is not an uncompressed P-256 public key")
        }
        guard auth.count == 16 else {
            throw WebPushSetupError(.subscription, "the subscription's auth secret is \(auth.count) bytes, not 16")
        }
        return self
    }
}

extension WebPushMessage.Subscription {
    /// `{"endpoint":"…","keys":{"auth":"…","p256dh":"…"}}`, the keys in unpadded base64url: one text per subscription,
    /// however the browser's JSON was spaced or ordered. The broker stores a device's subscription this way, and a
    /// delivery to it carries it as its target's value (`PushTarget.Kind.webPushSubscription`); `init(json:)` reads it back.
    public var canonicalJSON: String {
        struct Keys: Encodable { var p256dh: String; var auth: String }
        struct Form: Encodable { var endpoint: String; var keys: Keys }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let form = Form(endpoint: endpoint.absoluteString, keys: Keys(p256dh: Base64URL.encode(p256dh), auth: Base64URL.encode(auth)))
        // Strings and nothing else: encoding cannot fail.
        return (try? encoder.encode(form)).map { String(decoding: $0, as: UTF8.self) } ?? ""
    }
}
