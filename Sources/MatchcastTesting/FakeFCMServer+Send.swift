import Foundation

extension FakeFCMServer.State {
    /// The send endpoint: the bearer token, then the message's shape, then the script.
    func send(path: String, contentType: String?, authorization: String?, body: [UInt8]) -> Reply {
        guard path == "/v1/projects/\(projectId)/messages:send" else {
            return record(.send, Reply(status: 404, body: Self.googleError(404, "NOT_FOUND", "Requested entity was not found.")),
                          problem: "\(path): not this project's send path")
        }
        if let refusal = authorize(authorization) {
            return record(.send, Reply(status: 401, body: Self.googleError(
                401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token.")),
                          problem: refusal)
        }
        let message: FakeFCMServer.Message
        switch parse(contentType: contentType, body: body, accessToken: String(authorization!.dropFirst("Bearer ".count))) {
        case .failure(let violation):
            return record(.send, Reply(status: 400, body: Self.badRequest(field: violation.field, violation.message)),
                          problem: "\(violation.field): \(violation.message)")
        case .success(let parsed):
            message = parsed
        }
        return locked { values -> Reply in
            let answer: FakeFCMServer.Answer = values.script.isEmpty ? .ok : values.script.removeFirst()
            let reply: Reply
            switch answer {
            case .ok where values.unregistered.contains(message.token):
                reply = Reply(status: 404, body: Self.fcmError(404, "NOT_FOUND", errorCode: "UNREGISTERED", "Requested entity was not found."))
            case .ok where values.invalid.contains(message.token):
                reply = Self.invalidTokenReply
            case .ok:
                values.messages.append(message)
                reply = Reply(status: 200, body: #"{"name":"projects/\#(projectId)/messages/0:\#(values.messages.count)"}"#)
            case .quotaExceeded(let retryAfter):
                reply = Reply(status: 429, body: Self.fcmError(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED", "Quota exceeded."),
                              retryAfter: retryAfter)
            case .internalError:
                reply = Reply(status: 500, body: Self.fcmError(500, "INTERNAL", errorCode: "INTERNAL", "Internal error encountered."))
            case .unavailable(let retryAfter):
                reply = Reply(status: 503, body: Self.fcmError(503, "UNAVAILABLE", errorCode: "UNAVAILABLE", "The service is currently unavailable."),
                              retryAfter: retryAfter)
            case .unregistered:
                values.unregistered.insert(message.token)
                reply = Reply(status: 404, body: Self.fcmError(404, "NOT_FOUND", errorCode: "UNREGISTERED", "Requested entity was not found."))
            case .invalidToken:
                values.invalid.insert(message.token)
                reply = Self.invalidTokenReply
            case .invalidPayload:
                reply = Reply(status: 400, body: Self.badRequest(field: "message.data[0].value", "Invalid value at 'message.data[0].value'"))
            case .revokeAccessToken:
                values.revoked.insert(message.accessToken)
                reply = Reply(status: 401, body: Self.googleError(401, "UNAUTHENTICATED", "Request had invalid authentication credentials."))
            case .senderIdMismatch:
                reply = Reply(status: 403, body: Self.fcmError(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH", "SenderId mismatch"))
            case .thirdPartyAuthError:
                reply = Reply(status: 401, body: Self.fcmError(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR", "Auth error from APNS or Web Push Service"))
            }
            values.log.append(FakeFCMServer.Exchange(kind: .send, status: reply.status, problem: nil))
            return reply
        }
    }

    private static var invalidTokenReply: Reply {
        Reply(status: 400, body: fcmError(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
                                          "The registration token is not a valid FCM registration token"))
    }

    /// Why the bearer token is refused, or nil when it is one this fake granted and it has not expired or been revoked.
    private func authorize(_ authorization: String?) -> String? {
        guard let authorization, authorization.hasPrefix("Bearer ") else { return "no bearer token" }
        let token = String(authorization.dropFirst("Bearer ".count))
        let now = now()
        return locked { values in
            guard let expiry = values.granted[token] else { return "access token not granted here" }
            if values.revoked.contains(token) { return "access token revoked" }
            if now >= expiry { return "access token expired" }
            return nil
        }
    }

    struct Violation: Error {
        var field: String
        var message: String
    }

    /// The message, or the first field that is wrong with it.
    private func parse(contentType: String?, body: [UInt8], accessToken: String) -> Result<FakeFCMServer.Message, Violation> {
        guard contentType?.lowercased().hasPrefix("application/json") == true else {
            return .failure(Violation(field: "content-type", message: "not application/json"))
        }
        guard let root = (try? JSONSerialization.jsonObject(with: Data(body))) as? [String: Any], root.keys.sorted() == ["message"],
              let message = root["message"] as? [String: Any]
        else { return .failure(Violation(field: "message", message: "body is not {\"message\": {...}}")) }
        if let unknown = Set(message.keys).subtracting(["token", "data", "android"]).first {
            return .failure(Violation(field: "message", message: "unknown field '\(unknown)' (expected token, data, android)"))
        }
        guard let token = message["token"] as? String, !token.isEmpty else {
            return .failure(Violation(field: "message.token", message: "missing"))
        }
        guard let rawData = message["data"] as? [String: Any] else {
            return .failure(Violation(field: "message.data", message: "missing or not an object"))
        }
        var data: [String: String] = [:]
        for (key, value) in rawData {
            guard let text = value as? String else {
                return .failure(Violation(field: "message.data[\(key)]", message: "value is not a string"))
            }
            let lower = key.lowercased()
            if ["from", "message_type"].contains(lower) || lower.hasPrefix("google") || lower.hasPrefix("gcm") {
                return .failure(Violation(field: "message.data[\(key)]", message: "reserved key"))
            }
            data[key] = text
        }
        let size = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= 4096 else { return .failure(Violation(field: "message.data", message: "\(size) bytes, over 4096")) }
        guard let android = message["android"] as? [String: Any] else {
            return .failure(Violation(field: "message.android", message: "missing"))
        }
        if let unknown = Set(android.keys).subtracting(["priority", "ttl", "collapse_key"]).first {
            return .failure(Violation(field: "message.android", message: "unknown field '\(unknown)'"))
        }
        guard let priority = android["priority"] as? String, ["HIGH", "NORMAL"].contains(priority) else {
            return .failure(Violation(field: "message.android.priority", message: "not HIGH or NORMAL"))
        }
        guard let ttl = android["ttl"] as? String, ttl.hasSuffix("s"), let seconds = Int(ttl.dropLast()), seconds >= 0,
              seconds <= 2_419_200
        else { return .failure(Violation(field: "message.android.ttl", message: "not '<seconds>s' within 28 days")) }
        guard let collapseKey = android["collapse_key"] as? String, !collapseKey.isEmpty else {
            return .failure(Violation(field: "message.android.collapse_key", message: "missing"))
        }
        return .success(FakeFCMServer.Message(
            token: token, data: data, priority: priority, ttl: ttl, collapseKey: collapseKey, accessToken: accessToken))
    }
}
