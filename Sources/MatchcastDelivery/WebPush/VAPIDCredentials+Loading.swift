import Crypto
import Foundation

extension VAPIDCredentials {
    /// A VAPID key file larger than this holds no single P-256 key.
    public static let maximumKeyFileBytes = 16 * 1024

    /// The credentials from a key file and a subject, each checked with a message naming what is wrong (never the key).
    ///
    /// The file holds a P-256 private key as PEM (`-----BEGIN PRIVATE KEY-----`, PKCS #8, or `-----BEGIN EC PRIVATE
    /// KEY-----`, SEC 1: what `matchcast webpush-keys` and `openssl ecparam -name prime256v1 -genkey` write), or the
    /// 32-byte private scalar in base64url (what the `web-push` npm tool prints as the private key).
    public static func load(keyFile path: String, subject: String) throws(WebPushSetupError) -> VAPIDCredentials {
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: maximumKeyFileBytes + 1) ?? Data()
        } catch {
            throw WebPushSetupError(.vapidKey, "cannot read the VAPID key file \(path): \(error.localizedDescription)")
        }
        guard data.count <= maximumKeyFileBytes else {
            throw WebPushSetupError(.vapidKey, "\(path): more than \(maximumKeyFileBytes / 1024) KB; not a VAPID key")
        }
        let key = try privateKey(fromFileText: String(decoding: data, as: UTF8.self), source: path)
        do {
            return try VAPIDCredentials(privateKey: key, subject: subject.trimmingCharacters(in: .whitespaces))
        } catch {
            throw WebPushSetupError(.vapidSubject, "\(error) (e.g. mailto:push@example.com)")
        }
    }

    /// The P-256 private key a key file's text holds (`load(keyFile:subject:)`); `source` names it in messages.
    public static func privateKey(fromFileText text: String, source: String) throws(WebPushSetupError) -> P256.Signing.PrivateKey {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let make = "make one with `matchcast webpush-keys --private-key-file FILE`"
        if trimmed.contains("-----BEGIN") {
            if trimmed.contains("BEGIN PUBLIC KEY") || trimmed.contains("BEGIN CERTIFICATE") {
                throw WebPushSetupError(.vapidKey, "\(source) holds a public key or certificate; the VAPID key file must hold the private key")
            }
            if trimmed.contains("BEGIN ENCRYPTED PRIVATE KEY") {
                throw WebPushSetupError(.vapidKey, "\(source) is encrypted; write it out without a passphrase (openssl pkcs8 -in FILE -out plain.pem)")
            }
            if trimmed.contains("BEGIN RSA PRIVATE KEY") {
                throw WebPushSetupError(.vapidKey, "\(source) is an RSA key; VAPID signs with a P-256 (prime256v1) EC key: \(make)")
            }
            guard let key = try? P256.Signing.PrivateKey(pemRepresentation: trimmed) else {
                throw WebPushSetupError(.vapidKey, "\(source) is not a P-256 (prime256v1) EC private key in PEM: \(make)")
            }
            return key
        }
        if let raw = Base64URL.decode(trimmed), raw.count == 32, let key = try? P256.Signing.PrivateKey(rawRepresentation: raw) {
            return key
        }
        throw WebPushSetupError(
            .vapidKey, "\(source) is neither a PEM P-256 private key nor a base64url 32-byte private key: \(make)")
    }

    /// A new VAPID key pair: the private key as PEM (PKCS #8) for the key file, and the public key in base64url, as a
    /// web app passes it to `pushManager.subscribe({applicationServerKey})`.
    public static func makeKeyPair() -> (privateKeyPEM: String, publicKey: String) {
        let key = P256.Signing.PrivateKey()
        return (key.pemRepresentation, Base64URL.encode(key.publicKey.x963Representation))
    }
}
