import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import Synchronization

extension FakeAPNsServer {
    /// What the server's handler and the test share.
    final class SharedState: Sendable {
        struct Values {
            var stickyFaults: [String: Failure] = [:]
            var tokenFaults: [String: [Failure]] = [:]
            var faults: [Failure] = []
            var providerTokensSeen: Set<String> = []
            var expiredProviderTokens: Set<String> = []
            var accepted: [Notification] = []
            var log: [Exchange] = []
        }

        let verifier: ProviderTokenVerifier
        private let values = Mutex(Values())

        init(verifier: ProviderTokenVerifier) {
            self.verifier = verifier
        }

        func locked<T>(_ body: (inout Values) -> T) -> T {
            values.withLock { body(&$0) }
        }

        func respond(to request: Request, context: Context) async throws -> Response {
            // Read past APNs' limit, so an oversized body is answered 413 rather than cut.
            let buffer = try await request.body.collect(upTo: 1 << 20)
            // An HTTP/2 stream's channel hangs off the connection's channel, which hangs off the
            // listening one; an HTTP/1 connection's channel hangs off the listening one directly.
            let http2 = context.channel.parent?.parent != nil
            let checked = RequestCheck.check(
                request, body: Array(buffer.readableBytesView), http2: http2, verifier: verifier)

            // Decide and record under one lock, so concurrent requests take faults in arrival order.
            let (status, reason, apnsID): (Int, String?, String?) = values.withLock { values in
                var exchange = Exchange(
                    token: checked.token, apnsID: checked.apnsID, providerToken: checked.providerToken, status: 200, reason: nil)
                defer { values.log.append(exchange) }
                if let jwt = checked.providerToken { values.providerTokensSeen.insert(jwt) }
                guard case .success(let notification) = checked.result else {
                    if case .failure(let refusal) = checked.result {
                        (exchange.status, exchange.reason) = (refusal.status, refusal.reason)
                    }
                    return (exchange.status, exchange.reason, checked.apnsID)
                }
                if let failure = Self.takeFault(for: notification, from: &values) {
                    (exchange.status, exchange.reason) = (failure.status, failure.reason)
                } else {
                    values.accepted.append(notification)
                }
                return (exchange.status, exchange.reason, checked.apnsID)
            }

            var headers: HTTPFields = [:]
            if let apnsID, let name = HTTPField.Name("apns-id") { headers[name] = apnsID }
            guard let reason else {
                return Response(status: .ok, headers: headers)
            }
            headers[.contentType] = "application/json"
            var body = #"{"reason":"\#(reason)""#
            if status == 410 { body += #","timestamp":\#(Int64(Date().timeIntervalSince1970 * 1000))"# }
            body += "}"
            return Response(
                status: HTTPResponse.Status(code: status), headers: headers,
                body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
        }

        /// The fault this request meets, most specific first: an expired provider token, a fault for
        /// every request to its token, the next fault queued for its token, the next queued for anyone.
        private static func takeFault(for notification: Notification, from values: inout Values) -> Failure? {
            if values.expiredProviderTokens.contains(notification.providerToken) { return .expiredProviderToken }
            if let sticky = values.stickyFaults[notification.token] { return sticky }
            if var queued = values.tokenFaults[notification.token], !queued.isEmpty {
                let failure = queued.removeFirst()
                values.tokenFaults[notification.token] = queued.isEmpty ? nil : queued
                return failure
            }
            if !values.faults.isEmpty { return values.faults.removeFirst() }
            return nil
        }
    }
}
