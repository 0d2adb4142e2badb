import Crypto
import Foundation
import MatchcastDelivery
import MatchcastTesting
import Testing
import _CryptoExtras

/// Loading a Google service account key file: what is accepted, and a clear error naming the field for each way a
/// file goes wrong, never quoting the key.
@Suite("FCM service account")
struct FCMServiceAccountTests {
    private typealias F = FCMFixture

    private static func load(_ changes: [String: Any] = [:], tokenURI: String = "https://oauth2.googleapis.com/token") throws
        -> Result<FCMServiceAccount, FCMError>
    {
        let json = try F.serviceAccountJSON(key: F.key, tokenURI: tokenURI, changes: changes)
        return Result { () throws(FCMError) in try FCMServiceAccount(json: json) }
    }

    /// The message of the error loading fails with; fails the test when loading succeeds.
    private static func failure(_ changes: [String: Any] = [:], tokenURI: String = "https://oauth2.googleapis.com/token") throws -> String {
        switch try load(changes, tokenURI: tokenURI) {
        case .success: Issue.record("loaded a bad service account"); return ""
        case .failure(let error):
            #expect(error.reason == "service_account")
            #expect(error.isConfigurationError)
            return "\(error)"
        }
    }

    @Test func loadsAGoogleKeyFile() throws {
        let account = try Self.load().get()
        #expect(account.projectId == F.projectId)
        #expect(account.clientEmail == F.clientEmail)
        #expect(account.privateKeyId == F.privateKeyId)
        #expect(account.tokenURI == "https://oauth2.googleapis.com/token")
        #expect(account.publicKey.derRepresentation == F.key.publicKey.derRepresentation)
    }

    @Test func acceptsPKCS1AsWellAsPKCS8() throws {
        let pkcs1 = try F.serviceAccountJSON(key: F.key, pkcs1: true)
        #expect(String(decoding: pkcs1, as: UTF8.self).contains("BEGIN RSA PRIVATE KEY"))
        let account = try FCMServiceAccount(json: pkcs1)
        #expect(account.publicKey.derRepresentation == F.key.publicKey.derRepresentation)
    }

    @Test func readsAFileAndNamesItInErrors() throws {
        let folder = try ScratchFolder.newFolder("fcm-sa")
        let good = folder.appendingPathComponent("sa.json").path
        try F.serviceAccountJSON(key: F.key).write(to: URL(fileURLWithPath: good))
        #expect(try FCMServiceAccount(contentsOfFile: good).projectId == F.projectId)

        let bad = folder.appendingPathComponent("bad.json").path
        try F.serviceAccountJSON(key: F.key, changes: ["client_email": NSNull()]).write(to: URL(fileURLWithPath: bad))
        let error = #expect(throws: FCMError.self) { try FCMServiceAccount(contentsOfFile: bad) }
        #expect("\(error!)".contains("'\(bad)'"))
        #expect("\(error!)".contains("field 'client_email' is missing"))

        let missing = #expect(throws: FCMError.self) { try FCMServiceAccount(contentsOfFile: folder.appendingPathComponent("absent.json").path) }
        #expect("\(missing!)".contains("cannot read"))
    }

    @Test(arguments: ["type", "project_id", "private_key", "client_email", "token_uri"])
    func namesTheMissingField(_ field: String) throws {
        #expect(try Self.failure([field: NSNull()]).contains("field '\(field)' is missing"))
        #expect(try Self.failure([field: 42]).contains("field '\(field)' is not a string"))
        #expect(try Self.failure([field: "  "]).contains("field '\(field)' is empty"))
    }

    @Test func refusesOtherKindsOfCredentials() throws {
        let message = try Self.failure(["type": "authorized_user"])
        #expect(message.contains("field 'type' is 'authorized_user', not 'service_account'"))
        #expect(try Self.failure(["project_id": "my project/../x"]).contains("field 'project_id'"))
        #expect(try Self.failure(["client_email": "not-an-address"]).contains("field 'client_email'"))
        #expect(try Self.failure(["private_key_id": "abc def"]).contains("field 'private_key_id'"))
    }

    @Test func refusesKeysThatAreNotRSA() throws {
        let ec = P256.Signing.PrivateKey().pemRepresentation
        #expect(try Self.failure(["private_key": ec]).contains("field 'private_key' is an EC key, not RSA"))
        #expect(try Self.failure(["private_key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"]).contains("is not a PEM private key"))
        let garbled = "-----BEGIN PRIVATE KEY-----\nAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n"
        #expect(try Self.failure(["private_key": garbled]).contains("is not a readable RSA private key"))
        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
        #expect(try Self.failure(["private_key": encrypted]).contains("is encrypted"))
        let short = try _RSA.Signing.PrivateKey(unsafeKeySize: .init(bitCount: 1024))
        #expect(try Self.failure(["private_key": short.pkcs8PEMRepresentation]).contains("1024-bit RSA key; at least 2048"))
    }

    @Test func acceptsAKeyWhoseNewlinesStayedEscaped() throws {
        let escaped = F.key.pkcs8PEMRepresentation.replacingOccurrences(of: "\n", with: "\\n")
        let account = try Self.load(["private_key": escaped]).get()
        #expect(account.publicKey.derRepresentation == F.key.publicKey.derRepresentation)
    }

    @Test func tokenURIMustBeHTTPSExceptToLoopback() throws {
        let remote = try Self.failure(tokenURI: "http://oauth2.example.com/token")
        #expect(remote.contains("field 'token_uri' must use https"))
        #expect(try Self.failure(tokenURI: "ftp://127.0.0.1/token").contains("field 'token_uri' must use https"))
        #expect(try Self.failure(tokenURI: "token").contains("field 'token_uri' is not an absolute URL"))
        #expect(try Self.failure(tokenURI: "https://user:pw@oauth2.googleapis.com/token").contains("field 'token_uri' must not carry"))
        #expect(try Self.load(tokenURI: "http://127.0.0.1:8080/token").get().tokenURI == "http://127.0.0.1:8080/token")
        #expect(try Self.load(tokenURI: "http://localhost:8080/token").get().tokenURI == "http://localhost:8080/token")
    }

    @Test func neverShowsTheKey() throws {
        let account = try Self.load().get()
        let key = F.key.pkcs8PEMRepresentation
        let body = key.split(separator: "\n").dropFirst().first.map(String.init) ?? key
        for text in ["\(account)", String(reflecting: account), "\(Mirror(reflecting: account).children.map { "\($0.value)" })"] {
            #expect(!text.contains(body))
            #expect(text.contains(F.projectId))
        }
        // An error about the key does not quote it either.
        let broken = key.replacingOccurrences(of: "MII", with: "XYZ")
        let message = try Self.failure(["private_key": broken])
        #expect(!message.contains(String(broken.split(separator: "\n")[1].prefix(24))))
        let configuration = FCMSinkConfiguration(
            serviceAccount: .json(try F.serviceAccountJSON(key: F.key)), recipient: .registrationToken(F.registrationToken))
        #expect(!"\(configuration)".contains(body))
        #expect(!"\(configuration)".contains(F.registrationToken))
    }
}
