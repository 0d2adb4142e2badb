import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization
import _CryptoExtras

/// A fake Firebase Cloud Messaging on `127.0.0.1` (a free port), serving both halves the FCM sink talks to:
///
/// - `POST /token`, Google's OAuth2 token endpoint: it checks the form (`grant_type` jwt-bearer), verifies the
///   assertion's RS256 signature with the service account's public key and its claims (`iss`, `scope`, `aud` = this
///   endpoint, `exp − iat` ≤ 3600, not expired, not issued in the future), and grants an access token living
///   `expiresIn` seconds. A bad assertion is answered 400 `invalid_grant`, as Google does.
/// - `POST /v1/projects/{project}/messages:send`: it checks the bearer token is one it granted and has not expired
///   (401 `UNAUTHENTICATED` otherwise), then the message's shape (a token; `data` of strings, keys clear of FCM's
///   reserved words, at most 4096 bytes of keys and values; `android` with `priority` HIGH or NORMAL, `ttl` as
///   `<seconds>s`, a `collapse_key`), answering 400 with a `google.rpc.BadRequest` naming the field otherwise. Then
///   the next scripted `Answer`, if any; a token it was told is unregistered gets 404 `UNREGISTERED`; anything else is
///   accepted and recorded in `messages`.
///
/// Time is the injected `now` (a `WallClock` in tests), for the assertions and the access tokens alike. Written from
/// the FCM and Google OAuth documentation, sharing no code with the sink.
public final class FakeFCMServer: Sendable {
    /// A scripted answer to a send that passed the checks.
    public enum Answer: Sendable, Hashable {
        case ok
        /// 429 `QUOTA_EXCEEDED`, with this `Retry-After` (nil: none).
        case quotaExceeded(retryAfter: String?)
        /// 500 `INTERNAL`.
        case internalError
        /// 503 `UNAVAILABLE`, with this `Retry-After` (nil: none).
        case unavailable(retryAfter: String?)
        /// 404 `UNREGISTERED`; the token stays unregistered.
        case unregistered
        /// 400 `INVALID_ARGUMENT` about the registration token (an FcmError detail, no field violation); the token
        /// stays refused.
        case invalidToken
        /// 400 `INVALID_ARGUMENT` about the payload (a BadRequest field violation on `message.data`).
        case invalidPayload
        /// 401 `UNAUTHENTICATED`: the access token presented is revoked first, so it is refused from then on.
        case revokeAccessToken
        /// 403 `SENDER_ID_MISMATCH`.
        case senderIdMismatch
        /// 401 `THIRD_PARTY_AUTH_ERROR`: not about the access token.
        case thirdPartyAuthError
    }

    /// A scripted answer of the token endpoint to an assertion that passed the checks.
    public enum TokenAnswer: Sendable, Hashable {
        case grant
        /// 503 with an RFC 6749-style error body.
        case unavailable
        /// 400 `invalid_grant` ("Invalid JWT Signature.": as for a revoked key).
        case invalidGrant
    }

    /// A message the fake accepted.
    public struct Message: Sendable, Hashable {
        public var token: String
        public var data: [String: String]
        public var priority: String
        public var ttl: String
        public var collapseKey: String
        /// The access token it was sent with.
        public var accessToken: String
    }

    /// One request, answered.
    public struct Exchange: Sendable, Hashable {
        public enum Kind: String, Sendable { case token, send, other }
        public var kind: Kind
        public var status: Int
        /// What the checks found wrong with it (nil when nothing), or why it was refused.
        public var problem: String?
    }

    public let port: Int
    let state: State
    private let server: LocalHTTPServer

    private init(port: Int, state: State, server: LocalHTTPServer) {
        self.port = port
        self.state = state
        self.server = server
    }

    /// `http://127.0.0.1:<port>`: the sink's endpoint.
    public var url: String { "http://127.0.0.1:\(port)" }
    /// Where assertions are exchanged: the service account's `token_uri`.
    public var tokenURI: String { url + "/token" }

    /// Starts a fake for the service account whose public key, address and project these are.
    public static func start(
        publicKey: _RSA.Signing.PublicKey, clientEmail: String, projectId: String, expiresIn: Int = 3599,
        now: @escaping @Sendable () -> Date = { Date() }
    ) async throws -> FakeFCMServer {
        let state = State(
            publicKey: publicKey, clientEmail: clientEmail, projectId: projectId, expiresIn: expiresIn, now: now)
        let responder = CallbackResponder<BasicRequestContext> { request, _ in
            try await state.respond(to: request)
        }
        let server = try await LocalHTTPServer.start(name: "fake FCM", serverName: "matchcast-fake-fcm", responder: responder)
        state.setPort(server.port)
        return FakeFCMServer(port: server.port, state: state, server: server)
    }

    /// Stops the server and waits until it has.
    public func stop() async {
        await server.stop()
    }

    /// The next sends that pass the checks get these answers, in arrival order (after any already queued).
    public func script(_ answers: [Answer]) {
        state.locked { $0.script.append(contentsOf: answers) }
    }

    /// The next assertions that pass the checks get these answers, in arrival order.
    public func scriptTokens(_ answers: [TokenAnswer]) {
        state.locked { $0.tokenScript.append(contentsOf: answers) }
    }

    /// Every later send to `token` gets 404 `UNREGISTERED`.
    public func unregister(_ token: String) {
        state.locked { _ = $0.unregistered.insert(token) }
    }

    /// Access tokens granted from now on live this many seconds.
    public func setExpiresIn(_ seconds: Int) {
        state.locked { $0.expiresIn = seconds }
    }

    /// The token endpoint answers only after `delay` (a slow exchange, so concurrent sends pile up on it).
    public func delayTokenAnswers(by delay: Duration) {
        state.locked { $0.tokenDelay = delay }
    }

    /// Every message accepted so far, in arrival order.
    public var messages: [Message] { state.locked { $0.messages } }
    /// Every request so far, in arrival order.
    public var log: [Exchange] { state.locked { $0.log } }
    /// Access tokens granted so far.
    public var grants: Int { state.locked { $0.granted.count } }
    /// What the checks found wrong, in arrival order: empty when every request was well formed and authorized.
    public var problems: [String] { log.compactMap(\.problem) }
    /// The send answers, by status, in arrival order.
    public var sendStatuses: [Int] { log.filter { $0.kind == .send }.map(\.status) }
}
