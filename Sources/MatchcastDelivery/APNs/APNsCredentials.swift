import Crypto
import Foundation

/// What token-based APNs authentication needs: the team's P-256 signing key (an App Store Connect
/// `.p8` file, PEM `PRIVATE KEY`), its key id and the team id.
///
/// The key never leaves this value in text form: `description`, `debugDescription` and the mirror
/// show only the ids, and load errors say what is wrong without echoing the file.
public struct APNsCredentials: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// The `kid` of every provider token: the 10-character key id from App Store Connect.
    public let keyId: String
    /// The `iss` of every provider token: the 10-character team id.
    public let teamId: String
    let privateKey: P256.Signing.PrivateKey

    /// Credentials from a PEM key held in memory.
    /// - Throws: `APNsError` (`key`) when the text is not a P-256 private key, or an id is malformed.
    public init(keyPEM: String, keyId: String, teamId: String) throws(APNsError) {
        switch Self.parse(pem: keyPEM) {
        case .success(let key): try self.init(privateKey: key, keyId: keyId, teamId: teamId)
        case .failure(let problem): throw .invalidKey(problem.message)
        }
    }

    /// Credentials from a `.p8` key file.
    /// - Throws: `APNsError` (`key`) naming the file (never its contents) when it cannot be read or parsed.
    public init(keyFile path: String, keyId: String, teamId: String) throws(APNsError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .invalidKey("cannot read key file '\(path)'")
        }
        guard data.count <= 64 << 10, let text = String(data: data, encoding: .utf8) else {
            throw .invalidKey("key file '\(path)' is not a PEM text file")
        }
        switch Self.parse(pem: text) {
        case .success(let key): try self.init(privateKey: key, keyId: keyId, teamId: teamId)
        case .failure(let problem): throw .invalidKey("key file '\(path)': \(problem.message)")
        }
    }

    /// Credentials around a key already in memory (tests, or keys from a secret store).
    public init(privateKey: P256.Signing.PrivateKey, keyId: String, teamId: String) throws(APNsError) {
        try Self.validate(id: keyId, name: "key id")
        try Self.validate(id: teamId, name: "team id")
        self.privateKey = privateKey
        self.keyId = keyId
        self.teamId = teamId
    }

    /// The public half, for whoever verifies the provider tokens (a fake APNs in tests).
    public var publicKey: P256.Signing.PublicKey { privateKey.publicKey }

    public var description: String { "APNsCredentials(keyId: \(keyId), teamId: \(teamId), key: P-256 …)" }
    public var debugDescription: String { description }
    public var customMirror: Mirror { Mirror(self, children: ["keyId": keyId, "teamId": teamId], displayStyle: .struct) }

    private struct KeyProblem: Error {
        var message: String
    }

    /// The key in `pem`, or what is wrong with it. The underlying error is never passed on: it could
    /// quote part of the key.
    private static func parse(pem: String) -> Result<P256.Signing.PrivateKey, KeyProblem> {
        let trimmed = pem.trimmingCharacters(in: .whitespacesAndNewlines)
        guard trimmed.hasPrefix("-----BEGIN "), trimmed.contains("PRIVATE KEY-----") else {
            return .failure(KeyProblem(
                message: "not a PEM private key (expected '-----BEGIN PRIVATE KEY-----', as in an App Store Connect .p8 file)"))
        }
        guard let key = try? P256.Signing.PrivateKey(pemRepresentation: trimmed) else {
            return .failure(KeyProblem(message: "the PEM block is not a P-256 (ES256) private key"))
        }
        return .success(key)
    }

    /// Ids go into the JWT verbatim, so they are kept to what Apple issues: ASCII letters and digits.
    private static func validate(id: String, name: String) throws(APNsError) {
        guard !id.isEmpty else { throw .invalidKey("\(name) is empty") }
        guard id.utf8.count <= 64, id.unicodeScalars.allSatisfy({ $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0)) })
        else { throw .invalidKey("\(name) must be ASCII letters and digits (Apple issues 10 characters)") }
    }
}
