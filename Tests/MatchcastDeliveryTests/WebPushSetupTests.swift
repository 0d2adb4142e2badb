import AsyncHTTPClient
import Crypto
import Foundation
import MatchcastDelivery
import MatchcastTesting
import Testing

/// What a user hands the Web Push sink: the browser's subscription JSON, the VAPID key file and subject. Each bad
/// one is an error naming what is wrong, never quoting a key.
@Suite("Web Push setup: subscription files, VAPID keys and subjects")
struct WebPushSetupTests {
    static let now = Date(timeIntervalSince1970: 1_776_784_329)
    static let browser = P256.KeyAgreement.PrivateKey()
    static let p256dh = Base64URL.encode(browser.publicKey.x963Representation)
    static let auth = Base64URL.encode(Data(repeating: 7, count: 16))

    static func json(endpoint: Any = "https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBzZWNyZXQ", expiration: Any = NSNull(),
                     p256dh: Any? = Self.p256dh, auth: Any? = Self.auth, keys: Bool = true) -> Data {
        var keyObject: [String: Any] = [:]
        keyObject["p256dh"] = p256dh
        keyObject["auth"] = auth
        var object: [String: Any] = ["endpoint": endpoint, "expirationTime": expiration]
        if keys { object["keys"] = keyObject }
        return try! JSONSerialization.data(withJSONObject: object)
    }

    static func folder() throws -> URL { try ScratchFolder.newFolder("webpush-setup") }

    @Test func aBrowsersSubscriptionLoads() throws {
        let subscription = try WebPushMessage.Subscription(json: Self.json(expiration: 1_900_000_000_000), now: Self.now)
        #expect(subscription.endpoint.absoluteString == "https://fcm.googleapis.com/fcm/send/dGhpcyBpcyBzZWNyZXQ")
        #expect(subscription.p256dh == Self.browser.publicKey.x963Representation)
        #expect(subscription.auth == Data(repeating: 7, count: 16))
        #expect(subscription.origin == "https://fcm.googleapis.com")
        // From a file, and a local test server over http.
        let folder = try Self.folder()
        let file = folder.appendingPathComponent("subscription.json")
        try Self.json(endpoint: "http://127.0.0.1:8089/push/abc").write(to: file)
        #expect(try WebPushMessage.Subscription.load(file: file.path, now: Self.now).origin == "http://127.0.0.1:8089")
    }

    @Test(arguments: [
        (json(endpoint: "http://push.example.net/p/1"), "must be https"),
        (json(endpoint: "ftp://push.example.net/p/1"), "must be https"),
        (json(endpoint: "not a url"), "not a URL with a host"),
        (json(endpoint: 42), "no \"endpoint\""),
        (json(keys: false), "no \"keys\""),
        (json(p256dh: nil), "keys.p256dh\" is missing"),
        (json(p256dh: "***"), "keys.p256dh\" is missing or not base64url"),
        (json(p256dh: Base64URL.encode(browser.publicKey.compressedRepresentation)), "not an uncompressed P-256 public key (33 bytes"),
        (json(p256dh: Base64URL.encode(Data([4]) + Data(repeating: 1, count: 64))), "not an uncompressed P-256 public key (65 bytes"),
        (json(auth: Base64URL.encode(Data(repeating: 1, count: 12))), "\"keys.auth\" is 12 bytes"),
        (json(auth: nil), "\"keys.auth\" is missing"),
        (json(expiration: 1_700_000_000_000), "expired at 2023-11-14"),
        (json(expiration: "soon"), "expirationTime"),
        (Data("{\"endpoint\": ".utf8), "not JSON"),
        (Data("[1, 2]".utf8), "not a JSON object"),
    ])
    func aBadSubscriptionIsRefusedSayingWhy(_ json: Data, _ expected: String) throws {
        let error = #expect(throws: WebPushSetupError.self) {
            try WebPushMessage.Subscription(json: json, source: "sub.json", now: Self.now)
        }
        #expect(error?.part == .subscription)
        #expect(error?.description.hasPrefix("sub.json: ") == true)
        #expect(error?.description.contains(expected) == true, "\(error?.description ?? "")")
        #expect(error?.description.contains("dGhpcyBpcyBzZWNyZXQ") == false, "the endpoint's path stays out")
        #expect(error?.description.contains(Self.auth) == false)
    }

    @Test func aMissingSubscriptionFileIsNamed() {
        let error = #expect(throws: WebPushSetupError.self) {
            try WebPushMessage.Subscription.load(file: "/nonexistent/subscription.json")
        }
        #expect(error?.description.contains("cannot read the subscription file /nonexistent/subscription.json") == true)
    }

    @Test func vapidKeysLoadFromPEMOrBase64URL() throws {
        let folder = try Self.folder()
        let key = P256.Signing.PrivateKey()
        for (name, text) in [
            ("pkcs8.pem", key.pemRepresentation),
            ("raw.txt", Base64URL.encode(key.rawRepresentation) + "\n"),
        ] {
            let file = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: file)
            let credentials = try VAPIDCredentials.load(keyFile: file.path, subject: "mailto:push@example.com")
            #expect(credentials.publicKey == Base64URL.encode(key.publicKey.x963Representation), "\(name)")
        }
        let made = VAPIDCredentials.makeKeyPair()
        let file = folder.appendingPathComponent("made.pem")
        try Data(made.privateKeyPEM.utf8).write(to: file)
        #expect(try VAPIDCredentials.load(keyFile: file.path, subject: "https://example.com/contact").publicKey == made.publicKey)
    }

    @Test func aBadVAPIDKeyOrSubjectIsRefusedSayingWhy() throws {
        let folder = try Self.folder()
        let p256 = P256.Signing.PrivateKey()
        let cases: [(String, String, String)] = [
            ("public.pem", p256.publicKey.pemRepresentation, "holds a public key"),
            ("p384.pem", P384.Signing.PrivateKey().pemRepresentation, "not a P-256 (prime256v1) EC private key"),
            ("rsa.pem", "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\n-----END RSA PRIVATE KEY-----\n", "is an RSA key"),
            ("junk.txt", "hello", "neither a PEM P-256 private key nor"),
            ("zero.txt", Base64URL.encode(Data(repeating: 0, count: 32)), "neither a PEM P-256 private key nor"),
        ]
        for (name, text, expected) in cases {
            let file = folder.appendingPathComponent(name)
            try Data(text.utf8).write(to: file)
            let error = #expect(throws: WebPushSetupError.self) {
                try VAPIDCredentials.load(keyFile: file.path, subject: "mailto:push@example.com")
            }
            #expect(error?.part == .vapidKey)
            #expect(error?.description.contains(expected) == true, "\(name): \(error?.description ?? "")")
            #expect(error?.description.contains(file.path) == true)
        }
        let missing = #expect(throws: WebPushSetupError.self) {
            try VAPIDCredentials.load(keyFile: folder.appendingPathComponent("none.pem").path, subject: "mailto:a@b.c")
        }
        #expect(missing?.description.contains("cannot read the VAPID key file") == true)
        let good = folder.appendingPathComponent("good.pem")
        try Data(p256.pemRepresentation.utf8).write(to: good)
        for subject in ["push@example.com", "http://example.com", "mailto:"] {
            let error = #expect(throws: WebPushSetupError.self) { try VAPIDCredentials.load(keyFile: good.path, subject: subject) }
            #expect(error?.part == .vapidSubject && error?.description.contains("mailto: or https:") == true)
        }
    }

    @Test func theSinkRefusesASubscriptionItCannotSendTo() async throws {
        try await WebhookFixture.withClient { client in
            let vapid = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "mailto:push@example.com")
            let subscriptions = [
                WebPushMessage.Subscription(endpoint: URL(string: "http://push.example.net/p")!, p256dh: Self.browser.publicKey.x963Representation, auth: Data(count: 16)),
                WebPushMessage.Subscription(endpoint: URL(string: "https://push.example.net/p")!, p256dh: Data(count: 65), auth: Data(count: 16)),
                WebPushMessage.Subscription(endpoint: URL(string: "https://push.example.net/p")!, p256dh: Self.browser.publicKey.x963Representation, auth: Data(count: 8)),
            ]
            for subscription in subscriptions {
                #expect(throws: WebPushSetupError.self) {
                    try WebPushSink(configuration: WebPushSinkConfiguration(recipient: .subscription(subscription), vapid: vapid), client: client, deadLetters: InMemoryDeadLetters())
                }
            }
        }
    }
}
