import Foundation
import NIOCore
import NIOHPACK

/// Broadcast channels (iOS 18) on the fake APNs: Apple's channel management API and broadcast sends,
/// on the same port as device pushes (Apple serves them on other hosts; a test points both at the fake).
///
/// - `POST /1/apps/<bundle id>/channels` with `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`:
///   201 and a new base64 id in `apns-channel-id`;
/// - `DELETE /1/apps/<bundle id>/channels` with `apns-channel-id`: 204, or 404 `ChannelNotRegistered`;
/// - `GET /1/apps/<bundle id>/all-channels`: 200 `{"channels": [...]}`;
/// - `POST /4/broadcasts/apps/<bundle id>` with `apns-channel-id`, `apns-push-type: liveactivity`, `apns-priority`
///   5 or 10, `apns-expiration` (0 on a channel that stores nothing), no `apns-topic`, and a JSON body with `aps`
///   of at most 4096 bytes: 200 and counted per channel; an unknown channel is 400 `BadChannelId`.
///
/// Every request needs a valid provider token, as for device pushes. A test can fail the next
/// management requests (`failChannelRequests`) and, with `stopAnswering()`, leave them unanswered
/// (they are never answered later: a deadline test's request); broadcasts meet the faults queued
/// with `fail(next:with:)`.
extension FakeAPNsServer {
    /// One broadcast the fake accepted.
    public struct Broadcast: Sendable, Hashable {
        public var channelId: String
        public var bundleId: String
        public var priority: Int
        public var expiration: Int?
        /// `apns-request-id`, if sent.
        public var requestId: String?
        /// The body, byte for byte.
        public var body: [UInt8]
    }

    /// One channel management request as the fake answered it.
    public struct ChannelRequest: Sendable, Hashable {
        /// `create`, `delete`, `list`.
        public var operation: String
        public var channelId: String?
        public var status: Int
        public var reason: String?
    }

    /// What the fake knows of channels, under the server's lock.
    struct ChannelBook {
        /// Live channels: id → message storage policy.
        var live: [String: Int] = [:]
        var created: [String] = []
        var deleted: [String] = []
        var broadcasts: [Broadcast] = []
        var requests: [ChannelRequest] = []
        var faults: [Failure] = []
        /// Broadcast requests per `apns-request-id`, answered or refused.
        var attempts: [String: Int] = [:]
        var next = 0
    }

    /// What the connection answers to a channel request.
    struct ChannelReply {
        var status: Int
        var headers: [(name: String, value: String)] = []
        /// A JSON body, if any.
        var body: String?
        /// Leave the request unanswered (the fake stopped answering).
        var unanswered = false

        /// A refusal: `status` and `{"reason": reason}`.
        static func refusal(_ status: Int, _ reason: String) -> ChannelReply {
            ChannelReply(status: status, headers: [], body: #"{"reason":"\#(reason)"}"#)
        }
    }

    /// Channels created and not deleted, sorted.
    public var liveChannels: [String] { state.locked { $0.channels.live.keys.sorted() } }

    /// Every channel created so far, in order.
    public var createdChannels: [String] { state.locked { $0.channels.created } }

    /// Every channel deleted so far, in order.
    public var deletedChannels: [String] { state.locked { $0.channels.deleted } }

    /// Every broadcast accepted so far, in arrival order.
    public var broadcasts: [Broadcast] { state.locked { $0.channels.broadcasts } }

    /// Broadcasts accepted on one channel.
    public func broadcastCount(channel: String) -> Int {
        state.locked { $0.channels.broadcasts.lazy.filter { $0.channelId == channel }.count }
    }

    /// Broadcast requests that carried `requestId` (a retry keeps it).
    public func broadcastAttempts(requestId: String) -> Int {
        state.locked { $0.channels.attempts[requestId] ?? 0 }
    }

    /// Every channel management request so far, in arrival order.
    public var channelRequests: [ChannelRequest] { state.locked { $0.channels.requests } }

    /// Answers the next `count` channel management requests with `failure`.
    public func failChannelRequests(next count: Int, with failure: Failure) {
        state.locked { $0.channels.faults.append(contentsOf: repeatElement(failure, count: max(0, count))) }
    }

    /// Makes a channel as if created earlier (e.g. by a previous run), returning its id.
    @discardableResult
    public func addChannel(storagePolicy: Int = 1) -> String {
        state.locked { values in
            let id = Self.newChannelId(&values.channels)
            values.channels.live[id] = storagePolicy
            values.channels.created.append(id)
            return id
        }
    }

    static func newChannelId(_ book: inout ChannelBook) -> String {
        book.next += 1
        var bytes = Array("fake-channel-".utf8)
        bytes += withUnsafeBytes(of: UInt64(book.next).bigEndian, Array.init)
        bytes += (0..<8).map { _ in UInt8.random(in: 0...255) }
        return Data(bytes).base64EncodedString()
    }

    /// The answer to a channel management or broadcast request, or nil when `headers` ask for neither
    /// (a device push, checked as before).
    static func channelReply(
        _ headers: HPACKHeaders, body: ByteBuffer, state: SharedState, verify: (String) -> Result<Int64, Refusal>
    ) -> ChannelReply? {
        var fields: [String: String] = [:]
        for field in headers where fields[field.name] == nil { fields[field.name] = field.value }
        let path = fields[":path"] ?? ""
        let method = fields[":method"] ?? ""
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        // "", "1", "apps", bundle, "channels" | "all-channels"; "", "4", "broadcasts", "apps", bundle
        let management = parts.count == 5 && parts[1] == "1" && parts[2] == "apps" && ["channels", "all-channels"].contains(parts[4])
        let broadcast = parts.count == 5 && parts[1] == "4" && parts[2] == "broadcasts" && parts[3] == "apps"
        guard management || broadcast else { return nil }
        let bundleId = broadcast ? parts[4] : parts[3]
        let operation = broadcast ? "broadcast" : parts[4] == "all-channels" ? "list" : method == "POST" ? "create" : method == "DELETE" ? "delete" : "read"
        let channelId = fields["apns-channel-id"]

        // Checks in the order APNs would make them, then the test's faults, then the work.
        let jwt = fields["authorization"].flatMap(RequestCheck.bearerToken)
        var reply: ChannelReply
        if bundleId.isEmpty {
            reply = .refusal(404, "BadPath")
        } else if let jwt {
            switch verify(jwt) {
            case .failure(let refusal):
                reply = .refusal(refusal.status, refusal.reason)
            case .success:
                reply = state.locked { values -> ChannelReply in
                    if !broadcast, !values.answering { return ChannelReply(status: 0, unanswered: true) }
                    if !broadcast, !values.channels.faults.isEmpty {
                        let failure = values.channels.faults.removeFirst()
                        return .refusal(failure.status, failure.reason)
                    }
                    if broadcast {
                        if let id = fields["apns-request-id"] { values.channels.attempts[id, default: 0] += 1 }
                        // Faults queued for any request (`fail(next:with:)`) meet broadcasts too.
                        if !values.faults.isEmpty {
                            let failure = values.faults.removeFirst()
                            return .refusal(failure.status, failure.reason)
                        }
                    }
                    return work(operation, fields: fields, bundleId: bundleId, body: body, book: &values.channels)
                }
            }
        } else {
            reply = .refusal(403, "MissingProviderToken")
        }
        if reply.unanswered { return reply }
        let reason = reply.status >= 400 ? reply.body.flatMap { body -> String? in
            (try? JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])?["reason"] as? String
        } : nil
        state.locked { values in
            values.statusCounts[reply.status, default: 0] += 1
            if !broadcast {
                let id = operation == "create" ? reply.headers.first { $0.name == "apns-channel-id" }?.value : channelId
                values.channels.requests.append(ChannelRequest(operation: operation, channelId: id, status: reply.status, reason: reason))
            }
        }
        return reply
    }

    private static func work(
        _ operation: String, fields: [String: String], bundleId: String, body: ByteBuffer, book: inout ChannelBook
    ) -> ChannelReply {
        let method = fields[":method"] ?? ""
        let channelId = fields["apns-channel-id"]
        switch operation {
        case "create":
            guard method == "POST" else { return .refusal(405, "MethodNotAllowed") }
            guard let object = try? JSONSerialization.jsonObject(with: Data(body.readableBytesView)) as? [String: Any] else {
                return .refusal(400, "BadRequest")
            }
            guard let policy = object["message-storage-policy"] as? Int, policy == 0 || policy == 1 else {
                return .refusal(400, "BadMessageStoragePolicy")
            }
            guard object["push-type"] as? String == "LiveActivity" else { return .refusal(400, "BadPushType") }
            let id = newChannelId(&book)
            book.live[id] = policy
            book.created.append(id)
            return ChannelReply(status: 201, headers: [("apns-channel-id", id)])
        case "delete":
            guard let channelId, !channelId.isEmpty else { return .refusal(400, "MissingChannelId") }
            guard book.live.removeValue(forKey: channelId) != nil else { return .refusal(404, "ChannelNotRegistered") }
            book.deleted.append(channelId)
            return ChannelReply(status: 204)
        case "list":
            guard method == "GET" else { return .refusal(405, "MethodNotAllowed") }
            let ids = book.live.keys.sorted().map { #""\#($0)""# }.joined(separator: ",")
            return ChannelReply(status: 200, headers: [], body: #"{"channels":[\#(ids)]}"#)
        case "broadcast":
            guard method == "POST" else { return .refusal(405, "MethodNotAllowed") }
            guard let channelId, !channelId.isEmpty else { return .refusal(400, "MissingChannelId") }
            guard fields["apns-push-type"] == "liveactivity" else { return .refusal(400, "InvalidPushType") }
            guard fields["apns-topic"] == nil else { return .refusal(400, "TopicDisallowed") }
            guard let priority = fields["apns-priority"].flatMap(Int.init), priority == 5 || priority == 10 else {
                return .refusal(400, "BadPriority")
            }
            var expiration: Int?
            if let text = fields["apns-expiration"] {
                guard let value = Int(text), value >= 0 else { return .refusal(400, "BadExpirationDate") }
                expiration = value
            }
            guard let policy = book.live[channelId] else { return .refusal(400, "BadChannelId") }
            if policy == 0, (expiration ?? 0) != 0 { return .refusal(400, "BadExpirationDate") }
            guard body.readableBytes > 0 else { return .refusal(400, "PayloadEmpty") }
            guard body.readableBytes <= 4096 else { return .refusal(413, "PayloadTooLarge") }
            guard RequestCheck.isValidPayload(body) else { return .refusal(400, "BadPayload") }
            book.broadcasts.append(Broadcast(
                channelId: channelId, bundleId: bundleId, priority: priority, expiration: expiration,
                requestId: fields["apns-request-id"], body: Array(body.readableBytesView)))
            return ChannelReply(status: 200)
        default:
            return .refusal(405, "MethodNotAllowed")
        }
    }
}
