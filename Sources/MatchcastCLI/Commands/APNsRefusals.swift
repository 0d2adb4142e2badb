import Foundation
import MatchcastCore
import MatchcastDelivery
import Synchronization

/// What an APNs refusal means and what to do about it, in one line for a person at a terminal
/// (`follow`, `replay`). Tokens appear redacted; keys never.
enum APNsRefusal {
    static func explain(status: Int, reason: String?, configuration: BrokerConfiguration) -> String {
        let environment = configuration.apns.environment
        let other: APNsSinkConfiguration.Environment = environment == .production ? .sandbox : .production
        let topic = APNsHeaders.topic(bundleId: configuration.topicBundleId)
        let what = "HTTP \(status)\(reason.map { " \($0)" } ?? "")"
        switch reason {
        case "BadDeviceToken":
            return "\(what): APNs \(environment.rawValue) does not know this token; a token from a development build "
                + "(Xcode) needs sandbox, TestFlight and App Store builds production: try --apns-environment \(other.rawValue)"
        case "DeviceTokenNotForTopic":
            return "\(what): the token belongs to another app than topic \(topic): check --apns-topic / --bundle-id"
        case "TopicDisallowed":
            return "\(what): the key's team may not push to topic \(topic): check --apns-topic / --bundle-id and that the "
                + "app id has Push Notifications enabled for team \(configuration.apns.teamId)"
        case "BadTopic", "MissingTopic":
            return "\(what): topic \(topic) is not valid: --apns-topic takes the app's bundle id"
        case "InvalidProviderToken", "MissingProviderToken":
            return "\(what): the provider token was refused: check --apns-key-id, --apns-team-id and that --apns-key-file is that key"
        case "ExpiredProviderToken":
            return "\(what): the provider token was too old even after a fresh one; is this machine's clock right?"
        case "Unregistered", "ExpiredToken":
            return "\(what): the token is no longer valid (the activity was ended or the app removed); the activity is over"
        case "Forbidden":
            return "\(what): the key may not be used for this (is it an APNs key of team \(configuration.apns.teamId)?)"
        case "PayloadTooLarge":
            return "\(what): the payload is over 4 KB"
        case "TooManyRequests":
            return "\(what): too many pushes to this token; retried with backoff until the attempts ran out"
        default:
            if status == 410 { return "\(what): the token is no longer valid; the activity is over" }
            if status >= 500 { return "\(what): APNs is in trouble; retried with backoff until the attempts ran out" }
            return "\(what): APNs refused the request"
        }
    }
}

/// Dead letters told to a person: each refusal explained in one line on stderr (the first `limit`,
/// then a count at most every thousand), for `follow` and `replay`.
final class ExplainingDeadLetters: DeadLetterRecorder {
    let sink: String
    let configuration: BrokerConfiguration
    let command: String
    let limit: Int
    private let count = Mutex(0)

    init(sink: String, configuration: BrokerConfiguration, command: String, limit: Int = .max) {
        self.sink = sink
        self.configuration = configuration
        self.command = command
        self.limit = limit
    }

    func record(_ deliveries: [Delivery], status: Int, body: String) async {
        let seen = count.withLock { count in
            count += deliveries.count
            return count
        }
        guard seen <= limit || seen % 1000 < deliveries.count else { return }
        if seen > limit {
            StandardStreams.err("matchcast \(command): \(seen) deliveries refused by \(sink) so far")
            return
        }
        if sink == "apns" {
            struct ErrorBody: Decodable { var reason: String? }
            let reason = (try? JSONDecoder().decode(ErrorBody.self, from: Data(body.utf8)))?.reason
            let target = deliveries.first.map { " (\($0.target.kind.rawValue) \($0.target.redacted))" } ?? ""
            StandardStreams.err("matchcast \(command): APNs refused a push\(target): "
                + APNsRefusal.explain(status: status, reason: reason, configuration: configuration))
        } else if sink == "webpush" {
            // After a 404 or 410 every later push is dead-lettered too; the command says once that the subscription is gone.
            guard !body.hasPrefix("not sent: the subscription is gone") else { return }
            let what = deliveries.first.map { " (match \($0.matchId), \($0.payload.aps.event.rawValue))" } ?? ""
            StandardStreams.err("matchcast \(command): a web push was not delivered\(what): "
                + WebPushRefusal.explain(status: status, body: body))
        } else {
            StandardStreams.err("matchcast \(command): \(sink) refused \(deliveries.count) deliveries: HTTP \(status)")
        }
    }
}
