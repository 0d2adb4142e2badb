import AsyncHTTPClient
import Crypto
import Foundation
import MatchcastDelivery
import MatchcastTesting
import NIOCore
import Testing

/// The fake push service the Web Push tests rely on refuses what a real one refuses: otherwise a sink sending bad
/// headers or a bad token would pass them.
@Suite("Fake push service: it checks what a push service checks", .timeLimit(.minutes(1)))
struct FakePushServiceTests {
    static let now = Date(timeIntervalSince1970: 1_776_784_329)

    /// POSTs `message` with `change` applied to its headers and body; returns the status and what the service noted.
    static func post(
        _ message: WebPushMessage, client: HTTPClient, service: FakePushService,
        _ change: (inout [String: String], inout Data) -> Void = { _, _ in }
    ) async throws -> (status: Int, problems: [String]) {
        var headers = message.headers
        var body = message.body
        change(&headers, &body)
        var request = HTTPClientRequest(url: message.endpoint.absoluteString)
        request.method = .POST
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let response = try await client.execute(request, timeout: .seconds(30))
        _ = try await response.body.collect(upTo: 1 << 16)
        return (Int(response.status.code), service.log.last?.problems ?? [])
    }

    @Test func aGoodPushIsTakenAndOpenedAndEveryBadOneRefused() async throws {
        let key = P256.Signing.PrivateKey()
        try await FakePushService.with(now: { Self.now }) { service in
            let subscriber = service.subscribe(applicationServerKey: Base64URL.encode(key.publicKey.x963Representation))
            let subscription = try WebPushMessage.Subscription(json: subscriber.json, now: Self.now)
            let vapid = try VAPIDCredentials(privateKey: key, subject: "mailto:push@example.com")
            func message(now: Date = Self.now, vapid: VAPIDCredentials = vapid, to target: WebPushMessage.Subscription = subscription) throws -> WebPushMessage {
                try WebPushMessage(payload: Data(#"{"title":"x"}"#.utf8), to: target, vapid: vapid, ttl: 60, urgency: .high, topic: "abc", now: now)
            }
            try await WebhookFixture.withClient { client in
                let good = try await Self.post(try message(), client: client, service: service)
                #expect(good.status == 201 && good.problems.isEmpty)
                #expect(service.deliveredMessages.first?["title"] as? String == "x")

                let cases: [(String, Int, String, (inout [String: String], inout Data) -> Void)] = [
                    ("no TTL", 400, "no TTL", { headers, _ in headers["ttl"] = nil }),
                    ("negative TTL", 400, "TTL '-1'", { headers, _ in headers["ttl"] = "-1" }),
                    ("bad urgency", 400, "Urgency 'urgent'", { headers, _ in headers["urgency"] = "urgent" }),
                    ("long topic", 400, "Topic", { headers, _ in headers["topic"] = String(repeating: "a", count: 33) }),
                    ("topic alphabet", 400, "Topic", { headers, _ in headers["topic"] = "a+b" }),
                    ("encoding", 400, "Content-Encoding", { headers, _ in headers["content-encoding"] = "aesgcm" }),
                    ("no authorization", 401, "no 'Authorization: vapid'", { headers, _ in headers["authorization"] = nil }),
                    ("forged signature", 401, "signature does not verify", { headers, _ in
                        headers["authorization"] = headers["authorization"]!.replacingOccurrences(of: ", k=", with: "AAAA, k=")
                    }),
                    ("tampered body", 400, "decryption", { _, body in body[body.count - 1] ^= 1 }),
                    ("too large", 413, "over 4096", { _, body in body.append(Data(count: 4097 - body.count)) }),
                ]
                for (name, status, problem, change) in cases {
                    let answer = try await Self.post(try message(), client: client, service: service, change)
                    #expect(answer.status == status, "\(name)")
                    #expect(answer.problems.contains { $0.contains(problem) }, "\(name): \(answer.problems)")
                }
                // A token that expired, or for another key than the subscription's.
                let old = try await Self.post(try message(now: Self.now.addingTimeInterval(-13 * 3600)), client: client, service: service)
                #expect(old.status == 401 && old.problems.contains { $0.contains("exp") })
                let stranger = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "mailto:push@example.com")
                let other = try await Self.post(try message(vapid: stranger), client: client, service: service)
                #expect(other.status == 403)
                // An unknown subscription; one the browser left.
                var unknown = subscription
                unknown.endpoint = URL(string: "\(service.origin)/push/nobody")!
                #expect(try await Self.post(try message(to: unknown), client: client, service: service).status == 404)
                service.unsubscribe(subscriber)
                #expect(try await Self.post(try message(), client: client, service: service).status == 410)
                #expect(service.delivered.count == 1)
            }
        }
    }
}
