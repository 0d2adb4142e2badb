import Crypto
import Foundation

/// Web Push message encryption (RFC 8291): a payload encrypted for one browser subscription, as the `aes128gcm`
/// content coding of RFC 8188 in a single record, which is what a push service accepts as the body of a push.
///
/// The subscription gives the browser's P-256 public key (`keys.p256dh`, 65 bytes uncompressed) and its 16-byte
/// authentication secret (`keys.auth`). Each message takes a fresh P-256 key of the sender's and a fresh 16-byte
/// salt; both are parameters only so that a test can reproduce RFC 8291's worked example byte for byte.
///
/// ```
/// body = salt (16) ‖ record size (4, big-endian) ‖ key id length (1) = 65 ‖ sender public key (65)
///      ‖ AES-128-GCM(CEK, NONCE, plaintext ‖ 0x02) with its 16-byte tag
/// ```
/// where, with ECDH between the sender's key and the browser's, HMAC-SHA-256 as HKDF's extract and expand:
/// `IKM = HKDF(salt: auth, ikm: ecdh, info: "WebPush: info" ‖ 0 ‖ browser key ‖ sender key, 32)`,
/// `CEK = HKDF(salt, IKM, "Content-Encoding: aes128gcm" ‖ 0, 16)`, `NONCE = HKDF(salt, IKM, "Content-Encoding: nonce" ‖ 0, 12)`.
public enum WebPushEncryption {
    /// The record size written in the header: one record holds the whole message.
    public static let recordSize = 4096
    /// The most plaintext one message carries: the record size less the header (86 bytes), the tag (16) and the
    /// padding delimiter (1), as RFC 8291 §4 says push services must accept.
    public static let maximumPlaintext = 3993

    public enum Failure: Error, Equatable, CustomStringConvertible {
        /// `keys.p256dh` is not an uncompressed P-256 point.
        case badPublicKey
        /// `keys.auth` is not 16 bytes.
        case badAuthSecret
        /// The payload is longer than `maximumPlaintext`.
        case tooLarge(Int)
        /// The salt is not 16 bytes.
        case badSalt

        public var description: String {
            switch self {
            case .badPublicKey: "the subscription's p256dh key is not an uncompressed P-256 public key (65 bytes)"
            case .badAuthSecret: "the subscription's auth secret is not 16 bytes"
            case .tooLarge(let count): "the payload is \(count) bytes, more than the \(maximumPlaintext) one Web Push message carries"
            case .badSalt: "the salt is not 16 bytes"
            }
        }
    }

    /// `plaintext` encrypted for the subscription whose keys are `userAgentPublicKey` (p256dh) and `authSecret`.
    public static func encrypt(
        _ plaintext: some DataProtocol, userAgentPublicKey: Data, authSecret: Data,
        senderKey: P256.KeyAgreement.PrivateKey = P256.KeyAgreement.PrivateKey(),
        salt: Data = Data(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) })
    ) throws(Failure) -> Data {
        guard plaintext.count <= maximumPlaintext else { throw .tooLarge(plaintext.count) }
        guard authSecret.count == 16 else { throw .badAuthSecret }
        guard salt.count == 16 else { throw .badSalt }
        guard userAgentPublicKey.count == 65, userAgentPublicKey.first == 0x04,
              let userAgentKey = try? P256.KeyAgreement.PublicKey(x963Representation: userAgentPublicKey),
              let shared = try? senderKey.sharedSecretFromKeyAgreement(with: userAgentKey)
        else { throw .badPublicKey }
        let senderPublicKey = senderKey.publicKey.x963Representation
        let (key, nonce) = keys(
            sharedSecret: shared.withUnsafeBytes { Data($0) }, authSecret: authSecret, salt: salt,
            userAgentPublicKey: userAgentPublicKey, senderPublicKey: senderPublicKey)

        var padded = Data(plaintext)
        padded.append(0x02)  // the last (and only) record's delimiter, no padding after it
        // Cannot fail: a 16-byte key and a 12-byte nonce.
        let sealed = try! AES.GCM.seal(padded, using: key, nonce: nonce)

        var body = Data(capacity: 86 + sealed.ciphertext.count + sealed.tag.count)
        body.append(salt)
        withUnsafeBytes(of: UInt32(recordSize).bigEndian) { body.append(contentsOf: $0) }
        body.append(UInt8(senderPublicKey.count))
        body.append(senderPublicKey)
        body.append(sealed.ciphertext)
        body.append(sealed.tag)
        return body
    }

    /// The content-encryption key and nonce of RFC 8291 §3.3–3.4 and RFC 8188 §2.2–2.3.
    static func keys(
        sharedSecret: Data, authSecret: Data, salt: Data, userAgentPublicKey: Data, senderPublicKey: Data
    ) -> (key: SymmetricKey, nonce: AES.GCM.Nonce) {
        var keyInfo = Data("WebPush: info".utf8)
        keyInfo.append(0)
        keyInfo.append(userAgentPublicKey)
        keyInfo.append(senderPublicKey)
        let inputKey = expand(extract(salt: authSecret, inputKeyMaterial: sharedSecret), info: keyInfo, count: 32)
        let pseudorandomKey = extract(salt: salt, inputKeyMaterial: inputKey)
        let key = expand(pseudorandomKey, info: Data("Content-Encoding: aes128gcm\0".utf8), count: 16)
        let nonce = expand(pseudorandomKey, info: Data("Content-Encoding: nonce\0".utf8), count: 12)
        // Cannot fail: 12 bytes.
        return (SymmetricKey(data: key), try! AES.GCM.Nonce(data: nonce))
    }

    /// HKDF-Extract with SHA-256.
    private static func extract(salt: Data, inputKeyMaterial: Data) -> Data {
        Data(HMAC<SHA256>.authenticationCode(for: inputKeyMaterial, using: SymmetricKey(data: salt)))
    }

    /// HKDF-Expand with SHA-256, for at most one block (32 bytes): all these keys need.
    private static func expand(_ pseudorandomKey: Data, info: Data, count: Int) -> Data {
        var input = info
        input.append(0x01)
        return Data(HMAC<SHA256>.authenticationCode(for: input, using: SymmetricKey(data: pseudorandomKey)).prefix(count))
    }
}
