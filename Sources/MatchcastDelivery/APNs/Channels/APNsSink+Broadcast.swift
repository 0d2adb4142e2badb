import Foundation
import Logging
import MatchcastCore
import NIOCore

extension APNsSink {
    /// The path of a broadcast for the app whose topic is `<bundle id>.push-type.liveactivity`.
    static func broadcastPath(topic: String) -> String {
        let suffix = ".push-type.liveactivity"
        let bundleId = topic.hasSuffix(suffix) ? String(topic.dropLast(suffix.count)) : topic
        return "/4/broadcasts/apps/" + bundleId
    }

    /// Sends deliveries whose target is a broadcast channel (iOS 18): one `POST
    /// /4/broadcasts/apps/<bundle id>` each, on the sink's connections, with `apns-channel-id`,
    /// `apns-push-type: liveactivity`, `apns-priority`, `apns-expiration` and an `apns-request-id`
    /// that stays the same across retries; no `apns-topic` (the bundle id is in the path). The body
    /// is the payload, as for a device.
    ///
    /// Each channel's deliveries go in order; channels go side by side. Answers as for a device
    /// push, except that a refused channel (it is gone, or malformed) is not a dead token: the
    /// delivery is dead-lettered, and the broker deletes its channels on its own schedule.
    func broadcast(_ deliveries: [Delivery]) async throws -> QueueResult {
        struct Lane {
            var items: [Delivery]
            var next = 0
            var attempt = 0
            var refreshed = false
            var firstAttempt: Duration?
            var readyAt: Duration = .zero
            var done: Bool { next == items.count }
        }
        var lanes: [Lane] = []
        var laneOf: [String: Int] = [:]
        for delivery in deliveries {
            if let index = laneOf[delivery.target.value] {
                lanes[index].items.append(delivery)
            } else {
                laneOf[delivery.target.value] = lanes.count
                lanes.append(Lane(items: [delivery]))
            }
        }
        let elapsed = Stopwatch.start(clock)
        var result = QueueResult()
        var active = Array(lanes.indices)
        while !active.isEmpty {
            try Task.checkCancellation()
            let now = elapsed()
            let due = active.filter { lanes[$0].readyAt <= now }
            guard !due.isEmpty else {
                let wake = active.lazy.map { lanes[$0].readyAt }.min()!
                try await clock.sleep(for: wake - now)
                continue
            }
            let providerToken: APNsProviderToken
            do {
                providerToken = try signer.currentToken()
            } catch {
                for index in due { giveUpLane(lanes[index].items[lanes[index].next...], problem: "provider token signing failed", into: &result) }
                for index in due { lanes[index].next = lanes[index].items.count }
                active.removeAll { lanes[$0].done }
                continue
            }
            let requests = due.map { index -> APNsRequest in
                if lanes[index].firstAttempt == nil { lanes[index].firstAttempt = now }
                let delivery = lanes[index].items[lanes[index].next]
                let head = APNsRequestHead(fields: [
                    ("authorization", "bearer " + providerToken.jwt),
                    ("apns-push-type", delivery.apns.pushType),
                    ("apns-channel-id", delivery.target.value),
                    ("apns-priority", String(delivery.apns.priority)),
                    ("apns-expiration", String(delivery.apns.expiration)),
                    ("apns-request-id", APNsNotificationID.uuid(forDeliveryId: delivery.id)),
                    ("content-type", "application/json"),
                ])
                return APNsRequest(
                    head: head, path: Self.broadcastPath(topic: delivery.apns.topic), apnsID: nil,
                    body: ByteBuffer(bytes: delivery.payload.bytes))
            }
            let exchanges = await pool.send(requests)
            if Task.isCancelled { throw CancellationError() }
            for (position, index) in due.enumerated() {
                let delivery = lanes[index].items[lanes[index].next]
                var problem: String?
                var retryAfter: Duration?
                switch exchanges[position] {
                case .answered(let response):
                    let reason = response.body.isEmpty ? nil : APNsAnswer.reason(fromBody: response.body)
                    metrics.response(status: response.status, reason: reason)
                    switch APNsAnswer.classify(status: response.status, reason: reason) {
                    case .accepted:
                        result.delivered += 1
                    case .invalidToken, .rejected:
                        let text = String(decoding: response.body.prefix(200), as: UTF8.self)
                        await deadLetters.record([delivery], status: response.status, body: text)
                        logger.warning("APNs refused a broadcast; dead-lettered", metadata: [
                            "delivery.id": "\(delivery.id)", "apns.channel": "\(delivery.target.value)",
                            "apns.status": "\(response.status)", "apns.body": "\(text)",
                        ])
                        result.deadLettered += 1
                    case .expiredProviderToken:
                        if !lanes[index].refreshed, let fresh = try? signer.refresh(rejecting: providerToken), fresh != providerToken {
                            lanes[index].refreshed = true
                            continue
                        }
                        problem = "HTTP 403 ExpiredProviderToken"
                    case .throttled:
                        problem = "HTTP 429 \(reason ?? "")"
                        retryAfter = response.retryAfter.flatMap(Int64.init).map { Duration.seconds(max(0, $0)) }
                    case .serverError:
                        problem = "HTTP \(response.status) \(reason ?? "")"
                    }
                case .failed(let error) where error.kind == .cancelled:
                    giveUpLane(lanes[index].items[lanes[index].next...], problem: "\(error)", into: &result)
                    lanes[index].next = lanes[index].items.count
                    continue
                case .failed(let error):
                    metrics.requestError(kind: APNsAnswer.errorKind(error))
                    problem = "\(error)"
                }
                guard let problem else {
                    lanes[index].next += 1
                    lanes[index].attempt = 0
                    lanes[index].refreshed = false
                    lanes[index].firstAttempt = nil
                    lanes[index].readyAt = .zero
                    continue
                }
                lanes[index].attempt += 1
                let moment = elapsed()
                let delay = configuration.retry.delay(
                    afterAttempt: lanes[index].attempt, retryAfter: retryAfter,
                    elapsed: moment - (lanes[index].firstAttempt ?? moment), random: Double.random(in: 0..<1))
                if let delay {
                    lanes[index].readyAt = moment + delay
                } else {
                    logger.warning("APNs broadcast attempts exhausted", metadata: [
                        "apns.channel": "\(delivery.target.value)", "delivery.id": "\(delivery.id)", "apns.last": "\(problem)",
                    ])
                    giveUpLane(lanes[index].items[lanes[index].next...], problem: problem, into: &result)
                    lanes[index].next = lanes[index].items.count
                }
            }
            active.removeAll { lanes[$0].done }
        }
        return result
    }

    private func giveUpLane(_ rest: ArraySlice<Delivery>, problem: String, into result: inout QueueResult) {
        result.undelivered += rest
        result.failedTokens += 1
        result.problem = problem
    }
}
