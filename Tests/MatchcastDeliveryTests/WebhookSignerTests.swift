import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastTesting
import Testing

/// Standard Webhooks signing (docs/formats.md, "Webhook"), checked against the specification's published vector.
@Suite("Webhook signing", .timeLimit(.minutes(1)))
struct WebhookSignerTests {
    /// The vector from the reference library's tests (standard-webhooks/standard-webhooks,
    /// `libraries/python/tests/test_webhooks.py`, `test_sign_function`).
    enum Vector {
        static let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
        static let id = "msg_p5jXN8AQM9LWM0D4loKWxJek"
        static let timestamp: Int64 = 1_614_265_330
        static let body = Array(#"{"test": 2432232314}"#.utf8)
        static let signature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        static let at = Date(timeIntervalSince1970: TimeInterval(timestamp))
    }

    private static func signer(_ secret: String = Vector.secret) throws -> WebhookSigner {
        WebhookSigner(secret: try WebhookSecret(secret))
    }

    @Test func signsThePublishedVector() throws {
        let signer = try Self.signer()
        #expect(signer.signature(id: Vector.id, timestamp: Vector.timestamp, body: Vector.body) == Vector.signature)
        let headers = signer.headers(id: Vector.id, timestamp: Vector.timestamp, body: Vector.body)
        #expect(headers.map(\.name) == ["webhook-id", "webhook-timestamp", "webhook-signature"])
        #expect(headers.map(\.value) == [Vector.id, "1614265330", Vector.signature])
    }

    @Test func verifiesThePublishedVectorWithinFiveMinutes() throws {
        let signer = try Self.signer()
        for skew in [0.0, -300, 300, 299.5] {
            try signer.verify(id: Vector.id, timestamp: "1614265330", signatures: Vector.signature, body: Vector.body,
                              now: Vector.at.addingTimeInterval(skew))
        }
        for skew in [-301.0, 301, 86_400] {
            let error = #expect(throws: WebhookVerificationError.self) {
                try signer.verify(id: Vector.id, timestamp: "1614265330", signatures: Vector.signature, body: Vector.body,
                                  now: Vector.at.addingTimeInterval(skew))
            }
            #expect(error?.reason == "timestamp_out_of_tolerance")
        }
    }

    @Test func acceptsAnyMatchingSignatureInTheList() throws {
        let signer = try Self.signer()
        let list = [
            "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
            "v1a,hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzCInXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg==",
            "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
            "v1,not*base64",
            Vector.signature,
            "v1,AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
        ].joined(separator: " ")
        try signer.verify(id: Vector.id, timestamp: "1614265330", signatures: list, body: Vector.body, now: Vector.at)
    }

    @Test func rejectsAnythingThatDoesNotMatch() throws {
        let signer = try Self.signer()
        func reason(
            id: String? = Vector.id, timestamp: String? = "1614265330", signatures: String? = Vector.signature,
            body: [UInt8] = Vector.body, using other: WebhookSigner? = nil
        ) -> String? {
            do {
                try (other ?? signer).verify(id: id, timestamp: timestamp, signatures: signatures, body: body, now: Vector.at)
                return nil
            } catch {
                return error.reason
            }
        }
        #expect(reason(body: Array(#"{"test": 2432232315}"#.utf8)) == "no_matching_signature")
        #expect(reason(id: "msg_p5jXN8AQM9LWM0D4loKWxJel") == "no_matching_signature")
        #expect(reason(timestamp: "1614265331") == "no_matching_signature")
        // The right bytes under another version tag do not count.
        #expect(reason(signatures: "v2,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") == "no_matching_signature")
        #expect(reason(signatures: "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OA=") == "no_matching_signature")
        #expect(reason(using: WebhookSigner(secret: WebhookFixture.secret)) == "no_matching_signature")
        #expect(reason(id: nil) == "missing_header")
        #expect(reason(timestamp: nil) == "missing_header")
        #expect(reason(signatures: nil) == "missing_header")
        #expect(reason(signatures: "") == "missing_header")
        #expect(reason(timestamp: "hello") == "bad_timestamp")
        #expect(reason(timestamp: "1614265330.5") == "bad_timestamp")
    }

    @Test func signAndVerifyRoundTripOnADeliveryBody() throws {
        let signer = WebhookSigner(secret: WebhookFixture.secret)
        let batch = WebhookBatch(WebhookFixture.deliveries(3))
        let now = Date()
        let timestamp = Int64(now.timeIntervalSince1970)
        let signature = signer.signature(id: batch.id, timestamp: timestamp, body: batch.body)
        try signer.verify(id: batch.id, timestamp: String(timestamp), signatures: signature, body: batch.body, now: now)
    }
}

/// `whsec_` secrets: parsed strictly, never shown.
@Suite("Webhook secret", .timeLimit(.minutes(1)))
struct WebhookSecretTests {
    private static let key = "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

    @Test func parsesWithOrWithoutPaddingAndWhitespace() throws {
        #expect(try WebhookSecret("whsec_" + Self.key).byteCount == 24)
        #expect(try WebhookSecret(" whsec_\(Self.key)\n").byteCount == 24)
        let padded = Data(repeating: 0x5A, count: 25).base64EncodedString()
        #expect(padded.hasSuffix("=="))
        #expect(try WebhookSecret("whsec_" + padded).byteCount == 25)
        #expect(try WebhookSecret("whsec_" + padded.replacingOccurrences(of: "=", with: "")).byteCount == 25)
        let secret = try WebhookSecret("whsec_" + Self.key)
        #expect(secret.encoded == "whsec_" + Self.key)
        #expect(try WebhookSecret(secret.encoded).encoded == secret.encoded)
    }

    /// Bad secrets and the reason each is refused.
    static let badSecrets: [(String, String)] = {
        let short = Data(repeating: 1, count: 16).base64EncodedString()
        let long = Data(repeating: 1, count: 65).base64EncodedString()
        let accented = String(key.dropLast(4)) + "\u{00E9}abc"
        return [
            ("", "empty"),
            ("   ", "empty"),
            ("whsec_", "empty"),
            (key, "missing_prefix"),
            ("whsk_" + key, "missing_prefix"),
            ("WHSEC_" + key, "missing_prefix"),
            ("whsec_" + key + "!", "not_base64"),
            ("whsec_" + key + "A", "not_base64"),
            ("whsec_" + accented, "not_base64"),
            ("whsec_" + short, "bad_length"),
            ("whsec_" + long, "bad_length"),
        ]
    }()

    @Test(arguments: badSecrets)
    func refusesBadSecrets(text: String, reason: String) throws {
        let error = #expect(throws: WebhookSecretError.self) { try WebhookSecret(text) }
        #expect(error?.reason == reason)
        let description = error?.description ?? ""
        #expect(!description.isEmpty)
        // The message names the problem, never the key.
        #expect(!description.contains(Self.key.prefix(8)))
        #expect(!description.contains("AQEBAQEB"))
    }

    @Test func neverShowsTheKey() throws {
        let secret = try WebhookSecret("whsec_" + Self.key)
        var dumped = ""
        dump(secret, to: &dumped)
        let configuration = WebhookSinkConfiguration(url: "https://hooks.example.com/in", secret: secret)
        for shown in ["\(secret)", String(describing: secret), String(reflecting: secret), dumped, "\(configuration)"] {
            #expect(!shown.contains(Self.key.prefix(6)), "\(shown)")
        }
        #expect("\(secret)" == "whsec_…(24 bytes)")
    }

    @Test func randomSecretsAreUsable() throws {
        let a = try WebhookSecret.random()
        let b = try WebhookSecret.random()
        #expect(a.byteCount == 32)
        #expect(a.encoded != b.encoded)
        #expect(throws: WebhookSecretError.self) { try WebhookSecret.random(byteCount: 8) }
    }
}
