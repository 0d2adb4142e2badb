import Crypto
import Foundation
import _CryptoExtras

/// A Google service account, as the JSON key file the Firebase console downloads ("Project settings", "Service
/// accounts", "Generate new private key"): what the FCM sink signs its OAuth2 assertions with and sends to.
///
/// Read fields: `type` (must be `service_account`), `project_id` (the Firebase project, in the send URL),
/// `private_key` (PEM RSA, PKCS#8 `BEGIN PRIVATE KEY` as Google writes it, or PKCS#1 `BEGIN RSA PRIVATE KEY`),
/// `private_key_id` (optional: the assertion's `kid`), `client_email` (the assertion's `iss`) and `token_uri`
/// (where assertions are exchanged for access tokens: https, or http to a loopback host for a local fake). The
/// other fields of the file are ignored.
///
/// The key never leaves this value in text form: `description`, `debugDescription` and the mirror show the project
/// and the account, and every error names the field at fault without quoting the key.
public struct FCMServiceAccount: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The Firebase project id.
    public let projectId: String
    /// The account's address: the assertion's issuer.
    public let clientEmail: String
    /// The key's id, sent as the assertion's `kid` so Google picks the right public key; nil when the file has none.
    public let privateKeyId: String?
    /// The OAuth2 token endpoint (`https://oauth2.googleapis.com/token` in Google's files); also the assertion's `aud`.
    public let tokenURI: String
    let privateKey: _RSA.Signing.PrivateKey

    /// Files larger than this are not service account keys (Google writes a few KB of JSON).
    static let maxFileBytes = 64 << 10

    /// The account in the JSON key file at `path`.
    /// - Throws: `FCMError` (`service_account`) naming the file and the field at fault, never quoting the key.
    public init(contentsOfFile path: String) throws(FCMError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .serviceAccount("cannot read service account file '\(path)'")
        }
        guard data.count <= Self.maxFileBytes else {
            throw .serviceAccount("'\(path)' is \(data.count) bytes; a service account key file is a few KB of JSON")
        }
        do {
            try self.init(validating: data)
        } catch {
            throw .serviceAccount("'\(path)': \(error.message)")
        }
    }

    /// The account in a JSON key file's contents (from a secret store, or tests).
    /// - Throws: `FCMError` (`service_account`) naming the field at fault.
    public init(json: Data) throws(FCMError) {
        do {
            try self.init(validating: json)
        } catch {
            throw .serviceAccount(error.message)
        }
    }

    /// An account around a key already in memory (tests).
    /// - Throws: `FCMError` (`service_account`) for a field that would not do in an assertion or a URL.
    public init(
        privateKey: _RSA.Signing.PrivateKey, projectId: String, clientEmail: String, tokenURI: String,
        privateKeyId: String? = nil
    ) throws(FCMError) {
        do {
            self.projectId = try Field.projectId(projectId)
            self.clientEmail = try Field.clientEmail(clientEmail)
            self.tokenURI = try Field.tokenURI(tokenURI)
            self.privateKeyId = try privateKeyId.map(Field.privateKeyId)
        } catch {
            throw .serviceAccount(error.message)
        }
        guard privateKey.keySizeInBits >= 2048 else { throw .serviceAccount("field 'private_key': RSA key under 2048 bits") }
        self.privateKey = privateKey
    }

    private init(validating json: Data) throws(Problem) {
        guard let object = try? JSONSerialization.jsonObject(with: json), let fields = object as? [String: Any] else {
            throw Problem("not a JSON object (expected a Google service account key file)")
        }
        let type = try Field.string(fields, "type")
        guard type == "service_account" else {
            throw Problem("field 'type' is '\(type.prefix(40))', not 'service_account' (a user or OAuth client file?)")
        }
        projectId = try Field.projectId(Field.string(fields, "project_id"))
        clientEmail = try Field.clientEmail(Field.string(fields, "client_email"))
        tokenURI = try Field.tokenURI(Field.string(fields, "token_uri"))
        privateKeyId = try fields["private_key_id"] == nil ? nil : Field.privateKeyId(Field.string(fields, "private_key_id"))
        privateKey = try Field.privateKey(Field.string(fields, "private_key"))
    }

    /// The public half, for whoever verifies the assertions (a fake token endpoint in tests).
    public var publicKey: _RSA.Signing.PublicKey { privateKey.publicKey }

    public var description: String {
        "FCMServiceAccount(projectId: \(projectId), clientEmail: \(clientEmail), tokenURI: \(tokenURI), key: RSA …)"
    }

    public var debugDescription: String { description }

    public var customMirror: Mirror {
        Mirror(
            self, children: ["projectId": projectId, "clientEmail": clientEmail, "tokenURI": tokenURI],
            displayStyle: .struct)
    }

    /// What is wrong with a field; never carries the key.
    struct Problem: Error {
        var message: String
        init(_ message: String) { self.message = message }
    }
}
