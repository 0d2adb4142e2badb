import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import NIOCore

extension APNsSink {
    /// What became of one delivery.
    private enum Outcome: Sendable {
        case delivered
        case invalidToken
        case deadLettered
        case exhausted(problem: String, outage: Bool)
    }

    /// Sends one token's deliveries in order. After the token is found dead the rest are not sent;
    /// after one delivery gives up, neither are the rest (they are returned undelivered, in order).
    func send(_ queue: TokenQueue) async throws -> QueueResult {
        var result = QueueResult()
        var logger = logger
        logger[metadataKey: "apns.token"] = "\(Redact.token(queue.token))"
        for (index, item) in queue.items.enumerated() {
            switch try await send(item, logger: logger) {
            case .delivered:
                result.delivered += 1
            case .deadLettered:
                result.deadLettered += 1
            case .invalidToken:
                result.invalid += queue.items.count - index
                return result
            case .exhausted(let problem, let outage):
                result.undelivered = queue.items[index...].map(\.delivery)
                result.failedTokens = 1
                result.problem = problem
                result.outage = outage
                return result
            }
        }
        return result
    }

    /// One delivery, retried until accepted, refused, or out of attempts.
    private func send(_ item: Item, logger: Logger) async throws -> Outcome {
        let elapsed = Self.stopwatch(clock)
        var logger = logger
        logger[metadataKey: "delivery.id"] = "\(item.delivery.id)"
        var attempt = 0
        var refreshed = false
        var providerToken: APNsProviderToken
        do {
            providerToken = try signer.currentToken()
        } catch {
            return .exhausted(problem: "provider token signing failed", outage: true)
        }
        while true {
            let problem: String
            var retryAfter: Duration?
            var outage = true
            do {
                let answer = try await post(item, jwt: providerToken.jwt)
                let reason = APNsAnswer.reason(fromBody: answer.body)
                metrics.response(status: answer.status, reason: reason)
                problem = "HTTP \(answer.status) \(reason ?? "")"
                switch APNsAnswer.classify(status: answer.status, reason: reason) {
                case .accepted:
                    logger.trace("APNs accepted")
                    return .delivered
                case .invalidToken:
                    let why = reason ?? "HTTP \(answer.status)"
                    logger.notice("APNs reports the device token dead", metadata: ["apns.reason": "\(why)"])
                    await onInvalidToken(item.delivery.target.value, why)
                    return .invalidToken
                case .rejected:
                    return await deadLetter(item.delivery, status: answer.status, body: answer.body, logger: logger)
                case .expiredProviderToken:
                    if !refreshed, let fresh = try? signer.refresh(rejecting: providerToken), fresh != providerToken {
                        refreshed = true
                        providerToken = fresh
                        logger.notice("APNs called the provider token expired; retrying with a new one")
                        continue
                    }
                case .throttled:
                    outage = false
                    retryAfter = answer.retryAfter.flatMap(Int64.init).map { .seconds(max(0, $0)) }
                case .serverError:
                    break
                }
            } catch {
                // A cancelled attempt is shutdown, not a failure of APNs.
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                let kind = APNsAnswer.errorKind(error)
                metrics.requestError(kind: kind)
                problem = "\(kind == "timeout" ? "timeout" : "connection error"): \(error)"
            }
            attempt += 1
            let delay = configuration.retry.delay(
                afterAttempt: attempt, retryAfter: retryAfter, elapsed: elapsed(), random: Double.random(in: 0..<1))
            guard let delay else {
                logger.warning("APNs attempts exhausted", metadata: ["apns.attempt": "\(attempt)", "apns.last": "\(problem)"])
                return .exhausted(problem: problem, outage: outage)
            }
            logger.debug("APNs attempt failed; retrying", metadata: [
                "apns.attempt": "\(attempt)", "apns.problem": "\(problem)", "apns.delay": "\(delay)",
            ])
            try await clock.sleep(for: delay)
            do {
                providerToken = try signer.currentToken()
            } catch {
                return .exhausted(problem: "provider token signing failed", outage: true)
            }
        }
    }

    private func deadLetter(_ delivery: Delivery, status: Int, body: [UInt8], logger: Logger) async -> Outcome {
        await deadLetters.record([delivery], status: status, body: String(decoding: body, as: UTF8.self))
        logger.warning("APNs refused a delivery; dead-lettered", metadata: [
            "apns.status": "\(status)", "apns.body": "\(String(decoding: body.prefix(200), as: UTF8.self))",
        ])
        return .deadLettered
    }

    private struct Answer: Sendable {
        var status: Int
        var retryAfter: String?
        var body: [UInt8]
    }

    /// One POST, raced against `requestTimeout` so that a stalled stream cannot hang it.
    private func post(_ item: Item, jwt: String) async throws -> Answer {
        let timeout = configuration.requestTimeout
        return try await withThrowingTaskGroup(of: Answer.self) { group in
            group.addTask { try await exchange(item, jwt: jwt) }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw APNsAnswer.RequestTimedOut()
            }
            defer { group.cancelAll() }
            guard let first = try await group.next() else { throw CancellationError() }
            return first
        }
    }

    private func exchange(_ item: Item, jwt: String) async throws -> Answer {
        let delivery = item.delivery
        var request = HTTPClientRequest(url: endpoint + "/3/device/" + delivery.target.value)
        request.method = .POST
        request.tlsConfiguration = tls
        request.headers.add(name: "authorization", value: "bearer " + jwt)
        request.headers.add(name: "apns-push-type", value: delivery.apns.pushType)
        request.headers.add(name: "apns-topic", value: delivery.apns.topic)
        request.headers.add(name: "apns-priority", value: String(delivery.apns.priority))
        request.headers.add(name: "apns-expiration", value: String(delivery.apns.expiration))
        request.headers.add(name: "apns-id", value: APNsNotificationID.uuid(forDeliveryId: delivery.id))
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(item.body)
        let response = try await client.execute(request, timeout: .nanoseconds(configuration.requestTimeout.nanoseconds))
        // The whole body is read: APNs' error bodies are small JSON, and reading is what frees the stream.
        var body: [UInt8] = []
        for try await chunk in response.body {
            if body.count < Self.maxBodyBytes { body.append(contentsOf: chunk.readableBytesView.prefix(Self.maxBodyBytes - body.count)) }
        }
        return Answer(status: Int(response.status.code), retryAfter: response.headers.first(name: "retry-after"), body: body)
    }

    /// More than any APNs answer holds; a longer body is cut, not buffered.
    private static var maxBodyBytes: Int { 64 << 10 }

    /// Time since the call, on `clock`, whatever its instant type.
    private static func stopwatch(_ clock: any Clock<Duration>) -> @Sendable () -> Duration {
        stopwatch(opened: clock)
    }

    private static func stopwatch<C: Clock>(opened clock: C) -> @Sendable () -> Duration where C.Duration == Duration {
        let start = clock.now
        return { start.duration(to: clock.now) }
    }
}

extension Duration {
    /// Whole nanoseconds, rounded down, saturating.
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        let (product, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? .max : product + attoseconds / 1_000_000_000
    }
}
