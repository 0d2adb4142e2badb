import Foundation
@testable import MatchcastDelivery
import Testing

/// What each FCM HTTP v1 answer means, from error bodies shaped as Firebase documents them.
@Suite("FCM answers")
struct FCMAnswerTests {
    private static func body(_ code: Int, _ status: String, errorCode: String? = nil, message: String? = nil, field: String? = nil) -> [UInt8] {
        var details: [[String: Any]] = []
        if let errorCode { details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": errorCode]) }
        if let field {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": field, "description": "Invalid value"]],
            ])
        }
        var error: [String: Any] = ["code": code, "status": status, "details": details]
        if let message { error["message"] = message }
        return Array(try! JSONSerialization.data(withJSONObject: ["error": error]))
    }

    private static func classify(_ status: Int, _ body: [UInt8]) -> FCMAnswer {
        FCMAnswer.classify(status: status, error: FCMAnswer.errorBody(body))
    }

    @Test func readsTheErrorBody() throws {
        let parsed = try #require(FCMAnswer.errorBody(Self.body(
            400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", message: "bad", field: "message.data[0].value")))
        #expect(parsed.status == "INVALID_ARGUMENT")
        #expect(parsed.errorCode == "INVALID_ARGUMENT")
        #expect(parsed.message == "bad")
        #expect(parsed.fieldViolations == ["message.data[0].value"])
        #expect(FCMAnswer.errorBody(Array("<html>502</html>".utf8)) == nil)
        #expect(FCMAnswer.errorBody([]) == nil)
        #expect(FCMAnswer.errorBody(Array(#"{"error": "invalid_grant"}"#.utf8)) == nil)
    }

    @Test func classifiesEachDocumentedAnswer() {
        #expect(Self.classify(200, Array(#"{"name":"projects/p/messages/1"}"#.utf8)) == .accepted)
        #expect(Self.classify(404, Self.body(404, "NOT_FOUND", errorCode: "UNREGISTERED")) == .invalidToken)
        // A 404 without UNREGISTERED (a wrong project in the URL) kills no token.
        #expect(Self.classify(404, Self.body(404, "NOT_FOUND")) == .rejected)
        #expect(Self.classify(400, Self.body(
            400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT",
            message: "The registration token is not a valid FCM registration token")) == .invalidToken)
        #expect(Self.classify(400, Self.body(400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT")) == .invalidToken)
        #expect(Self.classify(400, Self.body(400, "INVALID_ARGUMENT", field: "message.token")) == .invalidToken)
        #expect(Self.classify(401, Self.body(401, "UNAUTHENTICATED")) == .unauthenticated)
        #expect(Self.classify(401, Self.body(401, "UNAUTHENTICATED", errorCode: "THIRD_PARTY_AUTH_ERROR")) == .rejected)
        #expect(Self.classify(403, Self.body(403, "PERMISSION_DENIED", errorCode: "SENDER_ID_MISMATCH")) == .rejected)
        #expect(Self.classify(403, Self.body(403, "PERMISSION_DENIED")) == .rejected)
        #expect(Self.classify(429, Self.body(429, "RESOURCE_EXHAUSTED", errorCode: "QUOTA_EXCEEDED")) == .throttled)
        #expect(Self.classify(500, Self.body(500, "INTERNAL", errorCode: "INTERNAL")) == .serverError)
        #expect(Self.classify(503, Self.body(503, "UNAVAILABLE", errorCode: "UNAVAILABLE")) == .serverError)
        #expect(Self.classify(502, Array("Bad Gateway".utf8)) == .serverError)
    }

    @Test func aPayloadErrorDoesNotKillTheToken() {
        // The data, the TTL or the JSON at fault: a field violation names it.
        #expect(Self.classify(400, Self.body(400, "INVALID_ARGUMENT", field: "message.data[0].value")) == .rejected)
        #expect(Self.classify(400, Self.body(
            400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", field: "message.android.ttl")) == .rejected)
        #expect(Self.classify(400, Self.body(
            400, "INVALID_ARGUMENT", errorCode: "INVALID_ARGUMENT", message: "Message is too big")) == .rejected)
        #expect(Self.classify(400, Array("not json".utf8)) == .rejected)
    }

    @Test func metricReasonsStayWithinTheKnownSet() {
        #expect(FCMAnswer.metricReason("UNREGISTERED") == "UNREGISTERED")
        #expect(FCMAnswer.metricReason("SOMETHING_NEW") == "other")
        #expect(FCMAnswer.metricReason(nil) == "none")
    }

    @Test func aTokenEndpointAnswerIsAGrantARefusalOrAnOutage() {
        func grant(_ status: Int, _ json: String) -> FCMAccessToken.Grant {
            FCMAccessToken.grant(status: status, body: Array(json.utf8))
        }
        #expect(grant(200, #"{"access_token":"ya29.a0","expires_in":3599,"token_type":"Bearer"}"#)
            == .granted(value: "ya29.a0", expiresIn: 3599))
        #expect(grant(200, #"{"access_token":"ya29.a0","expires_in":9999999}"#) == .granted(value: "ya29.a0", expiresIn: 86400))
        guard case .refused(let why) = grant(400, #"{"error":"invalid_grant","error_description":"Invalid JWT Signature."}"#) else {
            Issue.record("invalid_grant is not a refusal")
            return
        }
        #expect(why == "HTTP 400: invalid_grant (Invalid JWT Signature.)")
        if case .granted = grant(200, #"{"access_token":"has space","expires_in":60}"#) { Issue.record("took a token with a space") }
        if case .granted = grant(200, #"{"access_token":"a","expires_in":0}"#) { Issue.record("took a token that never lived") }
        if case .granted = grant(200, #"{"access_token":"a","expires_in":60,"token_type":"MAC"}"#) { Issue.record("took a MAC token") }
        #expect(grant(503, "") == .unavailable(why: "HTTP 503"))
        #expect(grant(429, #"{"error":"rate_limit_exceeded"}"#) == .unavailable(why: "HTTP 429: rate_limit_exceeded"))
    }
}
