import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A Web Push service for tests: a real HTTP server on `127.0.0.1` (a free port) that checks each push as a push
/// service does and opens it as the browser would.
///
/// `subscribe()` plays the browser: it makes the P-256 key pair and auth secret, and hands out the
/// `PushSubscription.toJSON()` a web app would send. For every push to a known subscription the service checks the
/// VAPID `Authorization` (RFC 8292: an ES256 JWT whose signature verifies with the `k=` key, `aud` the endpoint's
/// origin, `exp` in the future and at most 24 hours away, `sub` a mailto: or https: contact, and `k` the
/// subscription's application server key when it was given one) and the RFC 8030 headers (`TTL` a number of
/// seconds, `Urgency` one of the four, `Topic` at most 32 base64url characters, `Content-Encoding: aes128gcm`),
/// then decrypts the body with the subscription's private key (`WebPushDecryption`, RFC 8291) and records the JSON.
///
/// A push that fails a check is answered as a push service would (401 or 403 for VAPID, 400 for headers or a body that
/// does not open, 413 past 4096 bytes, 404 for an unknown subscription) and recorded with its problems. A push that
/// passes is answered 201, unless the test scripted another answer (`script(_:)`, `answerAll(_:)`).
public final class FakePushService: Sendable {
    /// One browser subscription the service knows.
    public struct Subscriber: Sendable {
        public let id: String
        public let endpoint: URL
        /// The browser's key pair (`keys.p256dh` is its public half).
        public let key: P256.KeyAgreement.PrivateKey
        public let auth: Data
        /// The VAPID public key the subscription was made with (base64url); pushes signed with another are refused.
        public let applicationServerKey: String?

        /// A subscription no push service knows, at `endpoint`: for tests that only register it.
        public static func unattached(endpoint: URL = URL(string: "https://push.example.com/push/\(UUID().uuidString)")!) -> Subscriber {
            Subscriber(
                id: endpoint.lastPathComponent, endpoint: endpoint, key: P256.KeyAgreement.PrivateKey(),
                auth: Data(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }), applicationServerKey: nil)
        }

        /// `PushSubscription.toJSON()`, as the browser gives it to the web app.
        public var json: Data {
            let object: [String: Any] = [
                "endpoint": endpoint.absoluteString, "expirationTime": NSNull(),
                "keys": ["p256dh": Self.base64URL(key.publicKey.x963Representation), "auth": Self.base64URL(auth)],
            ]
            return try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        }

        /// Writes `json` to a file in `folder` and returns its path.
        public func writeJSON(in folder: URL, name: String = "subscription.json") throws -> String {
            let url = folder.appendingPathComponent(name)
            try json.write(to: url)
            return url.path
        }

        static func base64URL(_ bytes: some DataProtocol) -> String {
            Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }
    }

    /// How the service answers a push that passed its checks.
    public enum Answer: Sendable, Hashable {
        /// 201 Created: taken.
        case created
        /// 429 Too Many Requests, with this `Retry-After` when given.
        case tooManyRequests(retryAfter: String?)
        /// A 5xx.
        case serverError(Int)
        /// 404 or 410: the subscription is gone.
        case gone(Int)
        /// 413 Payload Too Large, with a body longer than anyone keeps.
        case tooLarge
        /// 400 Bad Request.
        case badRequest
        /// No answer: the connection is closed once the push is read.
        case drop
    }

    /// One push as the service saw it.
    public struct Push: Sendable {
        /// The subscription it was for; nil for an unknown path.
        public var subscriberId: String?
        /// The status answered; nil when the connection was dropped.
        public var status: Int?
        public var ttl: String?
        public var urgency: String?
        public var topic: String?
        public var contentEncoding: String?
        /// The VAPID claims, when the token could be read.
        public var audience: String?
        public var expiry: Int?
        public var subject: String?
        /// What was wrong with the push; empty when it passed every check.
        public var problems: [String] = []
        /// The decrypted body.
        public var plaintext: Data?

        /// The decrypted body as a JSON object.
        public var json: [String: Any]? {
            plaintext.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] }
        }
    }

    public let port: Int
    private let state: SharedState
    private let server: LocalHTTPServer

    private init(port: Int, state: SharedState, server: LocalHTTPServer) {
        self.port = port
        self.state = state
        self.server = server
    }

    /// `http://127.0.0.1:<port>`: the origin every subscription's endpoint has, and the VAPID audience.
    public var origin: String { "http://127.0.0.1:\(port)" }

    /// Starts a service checking token expiry against `now`.
    public static func start(now: @escaping @Sendable () -> Date = { Date() }) async throws -> FakePushService {
        let state = SharedState(now: now)
        let responder = CallbackResponder<Context> { request, context in
            try await state.respond(to: request, context: context)
        }
        let server = try await LocalHTTPServer.start(name: "fake push service", serverName: "matchcast-fake-push", responder: responder)
        state.locked { $0.origin = "http://127.0.0.1:\(server.port)" }
        return FakePushService(port: server.port, state: state, server: server)
    }

    /// Runs `body` with a started service and stops it afterwards, whether `body` throws or not.
    public static func with<T>(now: @escaping @Sendable () -> Date = { Date() }, _ body: (FakePushService) async throws -> T) async throws -> T {
        try await withStopping(try await start(now: now), stop: { await $0.stop() }, body)
    }

    public func stop() async {
        await server.stop()
    }

    /// A new browser subscription: a fresh key pair and auth secret. With `applicationServerKey` (the VAPID public
    /// key, base64url), only pushes signed by that key are taken, as real push services bind a subscription to it.
    public func subscribe(applicationServerKey: String? = nil) -> Subscriber {
        let id = UUID().uuidString.lowercased()
        let subscriber = Subscriber(
            id: id, endpoint: URL(string: "\(origin)/push/\(id)")!, key: P256.KeyAgreement.PrivateKey(),
            auth: Data(SymmetricKey(size: .bits128).withUnsafeBytes { Array($0) }), applicationServerKey: applicationServerKey)
        state.locked { $0.subscribers[id] = subscriber }
        return subscriber
    }

    /// The browser unsubscribed: every later push to `subscriber` is answered 410.
    public func unsubscribe(_ subscriber: Subscriber) {
        state.locked { $0.unsubscribed.insert(subscriber.id) }
    }

    /// Answers the next pushes that pass the checks with `answers`, in order (after those already scripted); the
    /// ones after them get 201.
    public func script(_ answers: [Answer]) {
        state.locked { $0.script.append(contentsOf: answers) }
    }

    /// Answers every push that passes the checks with `answer` once the script is used up, until called with nil.
    public func answerAll(_ answer: Answer?) {
        state.locked { $0.standing = answer }
    }

    /// Every push so far, in arrival order, whatever the answer.
    public var log: [Push] { state.locked { $0.log } }

    /// The pushes answered 201, in arrival order.
    public var delivered: [Push] { state.locked { $0.log.filter { $0.status == 201 } } }

    /// The decrypted JSON of every push answered 201, in arrival order.
    public var deliveredMessages: [[String: Any]] { delivered.compactMap(\.json) }

    /// How many pushes have arrived, answered or not yet.
    public var arrivals: Int { state.locked { $0.arrivals } }

    typealias Context = ChannelRequestContext
}

extension FakePushService {
    /// What the handler and the test share.
    final class SharedState: Sendable {
        struct Values {
            var origin = ""
            var subscribers: [String: Subscriber] = [:]
            var unsubscribed: Set<String> = []
            var script: [Answer] = []
            var standing: Answer?
            var arrivals = 0
            var log: [Push] = []
            var messageNumber = 0
        }

        let now: @Sendable () -> Date
        private let values = Mutex(Values())

        init(now: @escaping @Sendable () -> Date) {
            self.now = now
        }

        @discardableResult
        func locked<T>(_ body: (inout Values) -> T) -> T {
            values.withLock { body(&$0) }
        }

        func respond(to request: Request, context: Context) async throws -> Response {
            let buffer = try await request.body.collect(upTo: 1 << 20)
            let body = Data(buffer.readableBytesView)
            func header(_ name: String) -> String? { request.headers[HTTPField.Name(name)!] }
            let (origin, subscriber, gone) = locked { values -> (String, Subscriber?, Bool) in
                values.arrivals += 1
                let id = request.uri.path.hasPrefix("/push/") ? String(request.uri.path.dropFirst("/push/".count)) : ""
                return (values.origin, values.subscribers[id], values.unsubscribed.contains(id))
            }
            var push = Push(
                subscriberId: subscriber?.id, ttl: header("ttl"), urgency: header("urgency"), topic: header("topic"),
                contentEncoding: header("content-encoding"))

            // The checks, in the order a push service makes them; the first failing one decides the status.
            var status: Int?
            if request.method != .post {
                push.problems.append("method \(request.method) is not POST")
                status = 405
            }
            guard let subscriber else {
                push.problems.append("no subscription at \(request.uri.path)")
                return try await reply(record(push, answer: .status(404, retryAfter: nil, body: #"{"error":"no such subscription"}"#)), context: context)
            }
            let vapid = Self.checkVAPID(header("authorization"), origin: origin, now: now(), subscriber: subscriber, into: &push)
            if status == nil, let vapid { status = vapid }
            let headerProblems = Self.checkHeaders(push)
            push.problems += headerProblems
            if status == nil, !headerProblems.isEmpty { status = 400 }
            if body.count > 4096 {
                push.problems.append("the body is \(body.count) bytes, over 4096")
                if status == nil { status = 413 }
            } else {
                do {
                    push.plaintext = try WebPushDecryption.decrypt(body, userAgentKey: subscriber.key, authSecret: subscriber.auth)
                    if push.json == nil { push.problems.append("the decrypted body is not a JSON object") }
                } catch {
                    push.problems.append("decryption: \(error)")
                    if status == nil { status = 400 }
                }
            }
            if let status {
                let text = #"{"error":"\#(push.problems.first ?? "")"}"#
                return try await reply(record(push, answer: .status(status, retryAfter: nil, body: text)), context: context)
            }
            if gone {
                let text = #"{"error":"push subscription has unsubscribed or expired"}"#
                return try await reply(record(push, answer: .status(410, retryAfter: nil, body: text)), context: context)
            }
            return try await reply(record(push, answer: nil), context: context)
        }

        private enum Reply {
            case drop
            case status(Int, retryAfter: String?, body: String)
        }

        /// Records `push` with its answer (`nil`: the script's next, else the standing answer, else 201).
        private func record(_ push: Push, answer fixed: Reply?) -> Reply {
            locked { values in
                var push = push
                let reply: Reply
                if let fixed {
                    reply = fixed
                } else {
                    let scripted = values.script.isEmpty ? values.standing : values.script.removeFirst()
                    switch scripted ?? .created {
                    case .created: reply = .status(201, retryAfter: nil, body: "")
                    case .tooManyRequests(let retryAfter): reply = .status(429, retryAfter: retryAfter, body: #"{"error":"slow down"}"#)
                    case .serverError(let code): reply = .status(code, retryAfter: nil, body: #"{"error":"injected \#(code)"}"#)
                    case .gone(let code): reply = .status(code, retryAfter: nil, body: #"{"error":"push subscription has unsubscribed or expired"}"#)
                    case .tooLarge:
                        reply = .status(413, retryAfter: nil, body: #"{"error":"payload too large: "# + String(repeating: "x", count: 400) + #""}"#)
                    case .badRequest: reply = .status(400, retryAfter: nil, body: #"{"error":"injected 400"}"#)
                    case .drop: reply = .drop
                    }
                }
                if case .status(let code, _, _) = reply { push.status = code }
                values.log.append(push)
                return reply
            }
        }

        /// The response for `reply`; a dropped connection is closed and the handler ends without one.
        private func reply(_ reply: Reply, context: Context) async throws -> Response {
            switch reply {
            case .drop:
                try? await context.channel.close()
                throw CancellationError()
            case .status(let code, let retryAfter, let text):
                var headers: HTTPFields = [:]
                if let retryAfter { headers[.retryAfter] = retryAfter }
                if code == 201 {
                    let number = locked { values in
                        values.messageNumber += 1
                        return values.messageNumber
                    }
                    headers[.location] = "/message/\(number)"
                } else {
                    headers[.contentType] = "application/json"
                }
                return Response(status: HTTPResponse.Status(code: code), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
            }
        }

        /// RFC 8030 §5.2–5.4 and the content coding of RFC 8291.
        static func checkHeaders(_ push: Push) -> [String] {
            var problems: [String] = []
            if let ttl = push.ttl {
                if Int(ttl).map({ $0 < 0 }) ?? true { problems.append("TTL '\(ttl)' is not a number of seconds") }
            } else {
                problems.append("no TTL header")
            }
            if let urgency = push.urgency, !["very-low", "low", "normal", "high"].contains(urgency) {
                problems.append("Urgency '\(urgency)' is not very-low, low, normal or high")
            }
            if let topic = push.topic {
                let alphabet = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
                if topic.isEmpty || topic.count > 32 || !topic.allSatisfy(alphabet.contains) {
                    problems.append("Topic '\(topic)' is not 1 to 32 base64url characters")
                }
            }
            if push.contentEncoding?.lowercased() != "aes128gcm" {
                problems.append("Content-Encoding is '\(push.contentEncoding ?? "")', not aes128gcm")
            }
            return problems
        }

        /// RFC 8292: returns the status to refuse with (401, 403), or nil when the header is good.
        static func checkVAPID(
            _ header: String?, origin: String, now: Date, subscriber: Subscriber, into push: inout Push
        ) -> Int? {
            func refuse(_ status: Int, _ problem: String) -> Int {
                push.problems.append("VAPID: \(problem)")
                return status
            }
            guard let header, header.lowercased().hasPrefix("vapid ") else { return refuse(401, "no 'Authorization: vapid' header") }
            var parameters: [String: String] = [:]
            for part in header.dropFirst("vapid ".count).split(separator: ",") {
                let pair = part.trimmingCharacters(in: .whitespaces).split(separator: "=", maxSplits: 1)
                if pair.count == 2 { parameters[String(pair[0]).lowercased()] = String(pair[1]) }
            }
            guard let token = parameters["t"], let k = parameters["k"] else { return refuse(401, "t= or k= missing") }
            guard let keyBytes = decodeBase64URL(k), let key = try? P256.Signing.PublicKey(x963Representation: keyBytes), keyBytes.count == 65
            else { return refuse(401, "k= is not an uncompressed P-256 key") }
            let parts = token.split(separator: ".", omittingEmptySubsequences: false)
            guard parts.count == 3, let headerBytes = decodeBase64URL(parts[0]), let claimBytes = decodeBase64URL(parts[1]),
                  let signatureBytes = decodeBase64URL(parts[2])
            else { return refuse(401, "the token is not a JWS of three base64url parts") }
            let jwtHeader = (try? JSONSerialization.jsonObject(with: headerBytes)) as? [String: Any]
            guard jwtHeader?["alg"] as? String == "ES256" else { return refuse(401, "the token's alg is not ES256") }
            guard let claims = (try? JSONSerialization.jsonObject(with: claimBytes)) as? [String: Any] else {
                return refuse(401, "the token's claims are not a JSON object")
            }
            push.audience = claims["aud"] as? String
            push.expiry = (claims["exp"] as? NSNumber)?.intValue
            push.subject = claims["sub"] as? String
            guard let signature = try? P256.Signing.ECDSASignature(rawRepresentation: signatureBytes),
                  key.isValidSignature(signature, for: Data("\(parts[0]).\(parts[1])".utf8))
            else { return refuse(401, "the signature does not verify with the k= key") }
            guard push.audience == origin else { return refuse(401, "aud '\(push.audience ?? "")' is not the endpoint's origin \(origin)") }
            let nowSeconds = Int(now.timeIntervalSince1970)
            guard let expiry = push.expiry, expiry > nowSeconds, expiry <= nowSeconds + 24 * 3600 else {
                return refuse(401, "exp \(push.expiry.map(String.init) ?? "missing") is not within the next 24 hours")
            }
            guard let subject = push.subject, subject.hasPrefix("mailto:") || subject.hasPrefix("https:") else {
                return refuse(401, "sub is not a mailto: or https: contact")
            }
            if let expected = subscriber.applicationServerKey, expected != k {
                return refuse(403, "k= is not the key this subscription was made with")
            }
            return nil
        }

        static func decodeBase64URL(_ text: some StringProtocol) -> Data? {
            var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
            guard standard.utf8.count % 4 != 1 else { return nil }
            while standard.utf8.count % 4 != 0 { standard.append("=") }
            return Data(base64Encoded: standard)
        }
    }
}
