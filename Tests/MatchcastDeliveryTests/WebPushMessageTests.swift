import Crypto
import Foundation
import Testing

@testable import MatchcastDelivery

/// A push to one subscription: the encrypted body the browser reads, the RFC 8030 headers, and what each answer of a
/// push service means.
@Suite("Web Push message (RFC 8030)")
struct WebPushMessageTests {
    static let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aMessageIsTheEncryptedPayloadWithTheHeadersAPushServiceReads() throws {
        let browser = P256.KeyAgreement.PrivateKey()
        let auth = Data((0..<16).map { UInt8($0) })
        let endpoint = try #require(URL(string: "https://fcm.googleapis.com/fcm/send/dX1"))
        let subscription = WebPushMessage.Subscription(endpoint: endpoint, p256dh: browser.publicKey.x963Representation, auth: auth)
        let vapid = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "mailto:ops@example.com")
        let payload = Data(#"{"matchId":"epl-ars-che","score":"ARS 1-0 CHE"}"#.utf8)
        let message = try WebPushMessage(
            payload: payload, to: subscription, vapid: vapid, ttl: 120, urgency: .high, topic: "epl-ars-che", now: Self.now)

        #expect(message.endpoint == endpoint)
        #expect(message.headers["content-encoding"] == "aes128gcm")
        #expect(message.headers["content-type"] == "application/octet-stream")
        #expect(message.headers["ttl"] == "120")
        #expect(message.headers["urgency"] == "high")
        #expect(message.headers["topic"] == "epl-ars-che")
        #expect(message.headers["authorization"]?.hasPrefix("vapid t=") == true)
        #expect(message.headers["authorization"]?.hasSuffix(", k=\(vapid.publicKey)") == true)
        #expect(try WebPushEncryptionTests.decrypt(message.body, userAgentKey: browser, authSecret: auth) == payload)

        let untopical = try WebPushMessage(payload: payload, to: subscription, vapid: vapid, ttl: 0, urgency: .normal, topic: nil, now: Self.now)
        #expect(untopical.headers["topic"] == nil)
        #expect(untopical.headers["ttl"] == "0")
    }

    @Test func aMatchsTopicIs32Base64URLCharactersOfItsIdsSHA256() throws {
        // Computed apart from this code: base64url(sha256(id)[:24]) with Python's hashlib.
        #expect(WebPushMessage.topic(forMatch: "ipl-2026-m41") == "BqbucVSBIvEld4Sw6gpgIS8O1Xd2uoZ9")
        #expect(WebPushMessage.topic(forMatch: "espn:401547439") == "giNcsyrPFX2FcuptbXUd7cdaaUrNluVh")
        #expect(WebPushMessage.topic(forMatch: "") == "47DEQpj8HBSa-_TImW-5JCeuQeRkm5NM")
        // Any id, however long or odd, makes a topic a push service takes.
        let subscription = WebPushMessage.Subscription(
            endpoint: try #require(URL(string: "https://push.example.net/p/1")),
            p256dh: P256.KeyAgreement.PrivateKey().publicKey.x963Representation, auth: Data(count: 16))
        let vapid = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "mailto:ops@example.com")
        for id in ["ü/?&= ", String(repeating: "x", count: 10_000)] {
            let topic = WebPushMessage.topic(forMatch: id)
            #expect(topic.count == 32)
            let message = try WebPushMessage(
                payload: Data("{}".utf8), to: subscription, vapid: vapid, ttl: 60, urgency: .normal, topic: topic, now: Self.now)
            #expect(message.headers["topic"] == topic)
        }
    }

    @Test func badTopicsTTLsAndEndpointsAreRefused() throws {
        let subscription = WebPushMessage.Subscription(
            endpoint: try #require(URL(string: "https://push.example.net/p/1")),
            p256dh: P256.KeyAgreement.PrivateKey().publicKey.x963Representation, auth: Data(repeating: 7, count: 16))
        let vapid = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "mailto:ops@example.com")
        for topic in ["", String(repeating: "a", count: 33), "has space", "epl:ars-che"] {
            #expect(throws: WebPushMessageError.self, "\(topic)") {
                try WebPushMessage(payload: Data("x".utf8), to: subscription, vapid: vapid, ttl: 60, urgency: .normal, topic: topic, now: Self.now)
            }
        }
        #expect(throws: WebPushMessageError.self) {
            try WebPushMessage(payload: Data("x".utf8), to: subscription, vapid: vapid, ttl: -1, urgency: .normal, topic: nil, now: Self.now)
        }
        var insecure = subscription
        insecure.endpoint = try #require(URL(string: "http://push.example.net/p/1"))
        #expect(throws: VAPIDCredentials.Failure.badEndpoint) {
            try WebPushMessage(payload: Data("x".utf8), to: insecure, vapid: vapid, ttl: 60, urgency: .normal, topic: nil, now: Self.now)
        }
        var broken = subscription
        broken.auth = Data(repeating: 1, count: 8)
        #expect(throws: WebPushEncryption.Failure.badAuthSecret) {
            try WebPushMessage(payload: Data("x".utf8), to: broken, vapid: vapid, ttl: 60, urgency: .normal, topic: nil, now: Self.now)
        }
    }

    @Test(arguments: [
        (201, nil, WebPushMessage.Outcome.accepted),
        (200, nil, .accepted),
        (404, nil, .subscriptionGone),
        (410, nil, .subscriptionGone),
        (413, nil, .tooLarge),
        (429, "30", .retry(retryAfter: .seconds(30))),
        (503, "Fri, 15 Jan 2027 08:00:10 GMT", .retry(retryAfter: .seconds(10))),
        (500, nil, .retry(retryAfter: nil)),
        (400, nil, .refused(status: 400)),
        (403, nil, .refused(status: 403)),
    ] as [(Int, String?, WebPushMessage.Outcome)])
    func whatAPushServicesAnswerMeans(_ status: Int, _ retryAfter: String?, _ outcome: WebPushMessage.Outcome) {
        // 2027-01-15 08:00:00 GMT
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(WebPushMessage.Outcome(status: status, retryAfter: retryAfter, now: now) == outcome)
    }
}
