import MatchcastDelivery

/// What a Web Push dead letter means, in one line for a person at a terminal (`follow`, `replay`). The subscription's
/// endpoint path and keys never appear (the sink's dead-letter bodies hold neither).
enum WebPushRefusal {
    /// - Parameters:
    ///   - status: the push service's status, or 0 when it gave none (no connection, a timeout, or a push that
    ///     could not be built).
    ///   - body: the start of the push service's answer, or the sink's own account.
    static func explain(status: Int, body: String) -> String {
        let detail = body.isEmpty ? "" : " (\(body.prefix(240)))"
        switch status {
        case 0:
            return body.isEmpty ? "no answer from the push service" : String(body.prefix(240))
        case 401, 403:
            return "HTTP \(status): the push service refused the VAPID signature: is --vapid-key-file the key whose public "
                + "key the web app subscribed with (applicationServerKey)?\(detail)"
        case 404, 410:
            return "HTTP \(status): the subscription is gone (unsubscribed, expired or notifications blocked); subscribe again"
        case 413:
            return "HTTP 413: the message is too large for this push service\(detail)"
        case 429, 500..<600:
            return "HTTP \(status): retried with backoff until the attempts ran out\(detail)"
        default:
            return "HTTP \(status): the push service refused the push\(detail)"
        }
    }
}
