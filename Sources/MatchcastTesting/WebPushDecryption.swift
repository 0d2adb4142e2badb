import Crypto
import Foundation

/// The browser's side of RFC 8291: a Web Push body opened with the subscription's private key and auth secret,
/// as a user agent does. Written apart from the sink's `WebPushEncryption` (swift-crypto's HKDF here, RFC 8188's
/// header read field by field), so that the fake push service and the tests check the sink's encryption rather
/// than repeat it.
public enum WebPushDecryption {
    /// Why a body does not open, in words for a test's failure message.
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
        init(_ description: String) { self.description = description }
    }

    /// The plaintext of `body` (RFC 8188 `aes128gcm`, one record) for the subscription whose private key is
    /// `userAgentKey` and whose auth secret is `authSecret`.
    public static func decrypt(
        _ body: some DataProtocol, userAgentKey: P256.KeyAgreement.PrivateKey, authSecret: some DataProtocol
    ) throws(Failure) -> Data {
        let bytes = [UInt8](body)
        // salt (16) ‖ rs (4) ‖ idlen (1) ‖ keyid (idlen) ‖ record
        guard bytes.count >= 21 else { throw Failure("the body is \(bytes.count) bytes, shorter than the aes128gcm header") }
        let salt = Array(bytes[0..<16])
        let recordSize = bytes[16..<20].reduce(0) { $0 << 8 | Int($1) }
        let idLength = Int(bytes[20])
        guard recordSize >= 18 else { throw Failure("record size \(recordSize) is below aes128gcm's minimum of 18") }
        guard idLength == 65 else { throw Failure("the key id is \(idLength) bytes; Web Push puts the sender's 65-byte P-256 key there") }
        guard bytes.count >= 21 + idLength + 17 else { throw Failure("the body ends before its first record") }
        let senderKeyBytes = Array(bytes[21..<(21 + idLength)])
        let record = Array(bytes[(21 + idLength)...])
        guard record.count <= recordSize else {
            throw Failure("the record is \(record.count) bytes, more than the record size \(recordSize): Web Push sends one record")
        }
        let senderKey: P256.KeyAgreement.PublicKey
        do {
            senderKey = try P256.KeyAgreement.PublicKey(x963Representation: senderKeyBytes)
        } catch {
            throw Failure("the key id is not a P-256 public key")
        }
        let shared: SharedSecret
        do {
            shared = try userAgentKey.sharedSecretFromKeyAgreement(with: senderKey)
        } catch {
            throw Failure("no shared secret with the sender's key")
        }
        let userAgentPublic = userAgentKey.publicKey.x963Representation
        // RFC 8291 §3.4: IKM from the ECDH secret and the auth secret, bound to both public keys.
        let keyInfo = Data("WebPush: info".utf8) + [0] + userAgentPublic + senderKeyBytes
        let inputKey = shared.withUnsafeBytes { secret in
            HKDF<SHA256>.deriveKey(
                inputKeyMaterial: SymmetricKey(data: Data(secret)), salt: Data(authSecret), info: keyInfo, outputByteCount: 32)
        }
        // RFC 8188 §2.2, §2.3.
        let contentKey = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKey, salt: salt, info: Data("Content-Encoding: aes128gcm".utf8) + [0], outputByteCount: 16)
        let nonceBytes = HKDF<SHA256>.deriveKey(
            inputKeyMaterial: inputKey, salt: salt, info: Data("Content-Encoding: nonce".utf8) + [0], outputByteCount: 12)
        let padded: Data
        do {
            let nonce = try AES.GCM.Nonce(data: nonceBytes.withUnsafeBytes { Data($0) })
            let box = try AES.GCM.SealedBox(nonce: nonce, ciphertext: record.dropLast(16), tag: record.suffix(16))
            padded = try AES.GCM.open(box, using: contentKey)
        } catch {
            throw Failure("the record does not open (wrong keys, or not encrypted for this subscription)")
        }
        // The last record: the content, then the delimiter 0x02, then zero or more zero bytes of padding.
        guard let delimiter = padded.lastIndex(where: { $0 != 0 }), padded[delimiter] == 0x02 else {
            throw Failure("the last record does not end with the 0x02 delimiter")
        }
        return Data(padded[padded.startIndex..<delimiter])
    }
}
