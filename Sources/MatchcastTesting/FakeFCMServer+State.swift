import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization
import _CryptoExtras

extension FakeFCMServer {
    /// What the server's handler and the test share.
    final class State: Sendable {
        struct Values {
            var port = 0
            var expiresIn: Int
            var tokenDelay: Duration = .zero
            var script: [Answer] = []
            var tokenScript: [TokenAnswer] = []
            /// Access token → when it expires.
            var granted: [String: Date] = [:]
            var revoked: Set<String> = []
            var unregistered: Set<String> = []
            var invalid: Set<String> = []
            var messages: [Message] = []
            var log: [Exchange] = []
        }

        let publicKey: _RSA.Signing.PublicKey
        let clientEmail: String
        let projectId: String
        let now: @Sendable () -> Date
        private let values: Mutex<Values>

        init(publicKey: _RSA.Signing.PublicKey, clientEmail: String, projectId: String, expiresIn: Int, now: @escaping @Sendable () -> Date) {
            self.publicKey = publicKey
            self.clientEmail = clientEmail
            self.projectId = projectId
            self.now = now
            values = Mutex(Values(expiresIn: expiresIn))
        }

        func locked<T>(_ body: (inout Values) -> T) -> T {
            values.withLock { body(&$0) }
        }

        func setPort(_ port: Int) {
            locked { $0.port = port }
        }

        /// An answer: status, JSON body, and a `Retry-After` when set.
        struct Reply {
            var status: Int
            var body: String
            var retryAfter: String?
        }

        func respond(to request: Request) async throws -> Response {
            let body = Array(try await request.body.collect(upTo: 1 << 20).readableBytesView)
            let path = request.uri.path
            let reply: Reply
            if request.method == .post, path == "/token" {
                let delay = locked { $0.tokenDelay }
                if delay > .zero { try await Task.sleep(for: delay) }
                reply = token(contentType: request.headers[.contentType], body: body)
            } else if request.method == .post, path.hasPrefix("/v1/projects/"), path.hasSuffix("/messages:send") {
                reply = send(
                    path: path, contentType: request.headers[.contentType], authorization: request.headers[.authorization],
                    body: body)
            } else {
                reply = record(.other, Reply(status: 404, body: Self.googleError(404, "NOT_FOUND", "no such endpoint")),
                               problem: "\(request.method) \(path): no such endpoint")
            }
            var headers: HTTPFields = [.contentType: "application/json; charset=UTF-8"]
            if let retryAfter = reply.retryAfter { headers[.retryAfter] = retryAfter }
            return Response(
                status: HTTPResponse.Status(code: reply.status), headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(string: reply.body)))
        }

        func record(_ kind: Exchange.Kind, _ reply: Reply, problem: String?) -> Reply {
            locked { $0.log.append(Exchange(kind: kind, status: reply.status, problem: problem)) }
            return reply
        }

        /// `{"error": {"code", "message", "status", "details"}}` as Google APIs write it.
        static func googleError(_ code: Int, _ status: String, _ message: String, details: [[String: Any]] = []) -> String {
            var error: [String: Any] = ["code": code, "message": message, "status": status]
            if !details.isEmpty { error["details"] = details }
            let data = try! JSONSerialization.data(withJSONObject: ["error": error], options: [.sortedKeys])
            return String(decoding: data, as: UTF8.self)
        }

        static func fcmError(_ code: Int, _ status: String, errorCode: String, _ message: String) -> String {
            googleError(code, status, message, details: [
                ["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode]
            ])
        }

        static func badRequest(field: String, _ message: String) -> String {
            googleError(400, "INVALID_ARGUMENT", message, details: [[
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": field, "description": message]],
            ]])
        }
    }
}
