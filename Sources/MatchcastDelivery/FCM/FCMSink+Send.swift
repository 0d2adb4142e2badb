import Foundation
import Logging
import MatchcastCore
import Synchronization

extension FCMSink {
    /// What became of some queues' deliveries; `failure`: no access token could be had.
    typealias Totals = SendTally<Placed, FCMError>

    /// The next queue to start, and whether to start no more (one queue gave up: FCM, or the token endpoint, looks
    /// down, and the rest would only wait out the same retries).
    private final class Dispatch: Sendable {
        private let state = Mutex((next: 0, stopped: false))

        func take(below count: Int) -> Int? {
            state.withLock { state in
                guard !state.stopped, state.next < count else { return nil }
                defer { state.next += 1 }
                return state.next
            }
        }

        func stop() { state.withLock { $0.stopped = true } }
        var stopped: Bool { state.withLock { $0.stopped } }
        var started: Int { state.withLock { $0.next } }
    }

    /// Sends every queue, each in order, up to `maxConcurrentRequests` queues at once.
    func send(_ queues: [Queue]) async throws -> Totals {
        guard !queues.isEmpty else { return Totals() }
        let dispatch = Dispatch()
        let workers = min(configuration.maxConcurrentRequests, queues.count)
        var total = try await withThrowingTaskGroup(of: Totals.self) { group in
            for _ in 0..<workers {
                group.addTask {
                    var totals = Totals()
                    while let index = dispatch.take(below: queues.count) {
                        totals.merge(try await run(queues[index], dispatch: dispatch))
                    }
                    return totals
                }
            }
            var total = Totals()
            for try await totals in group { total.merge(totals) }
            return total
        }
        // Queues never started once sending stopped go back whole.
        for queue in queues[dispatch.started...] {
            total.undelivered += queue.messages.flatMap(\.deliveries)
        }
        return total
    }

    /// One queue's messages, one after another.
    private func run(_ queue: Queue, dispatch: Dispatch) async throws -> Totals {
        var totals = Totals()
        var index = 0
        while index < queue.messages.count {
            if dispatch.stopped {
                totals.undelivered += queue.messages[index...].flatMap(\.deliveries)
                return totals
            }
            let message = queue.messages[index]
            switch try await send(message, to: queue.token) {
            case .delivered:
                totals.delivered += message.deliveries.count
            case .deadLettered:
                totals.deadLettered += message.deliveries.count
            case .tokenDead(let status, let reason):
                // This message and every later one of the queue were meant for a dead token.
                let rest = queue.messages[index...].flatMap(\.deliveries).map(\.delivery)
                await deadLetters.record(rest, status: status, body: reason)
                totals.invalid += rest.count
                return totals
            case .gaveUp(let problem):
                totals.undelivered += queue.messages[index...].flatMap(\.deliveries)
                totals.failedQueues = 1
                totals.problem = problem
                dispatch.stop()
                return totals
            case .noAccessToken(let error):
                totals.undelivered += queue.messages[index...].flatMap(\.deliveries)
                totals.problem = "\(error)"
                totals.failure = error
                dispatch.stop()
                return totals
            }
            index += 1
        }
        return totals
    }

    private enum Outcome {
        case delivered
        case deadLettered
        /// FCM called the token dead (now, or earlier: `deadTokens`), with this status and reason.
        case tokenDead(status: Int, reason: String)
        case gaveUp(problem: String)
        case noAccessToken(FCMError)
    }

    /// One message, retried until FCM accepts or refuses it, or the retry policy gives up.
    private func send(_ message: Message, to token: String) async throws -> Outcome {
        let elapsed = Stopwatch.start(clock)
        let first = message.deliveries[0].delivery
        var attempt = 0
        var refreshed = false
        while true {
            if let dead = deadTokens.value(for: token) {
                return .tokenDead(status: dead.status, reason: "not sent: FCM called the token dead (\(dead.reason))")
            }
            let accessToken: FCMAccessToken
            do {
                accessToken = try await accessTokens.token()
            } catch let error as FCMError {
                return .noAccessToken(error)
            }
            var retryAfter: Duration?
            let problem: String
            do {
                let answer = try await exchange.post(
                    url: sendURL,
                    headers: [("content-type", "application/json; charset=UTF-8"), ("authorization", "Bearer " + accessToken.value)],
                    body: message.body)
                let error = FCMAnswer.errorBody(answer.body)
                let reason = error?.reason
                metrics.response(status: answer.status, reason: reason)
                answers.record([(CompactToken(token), answer.status, reason)], at: now())
                let why = Self.reason(status: answer.status, error: error, body: answer.body, limit: configuration.maxErrorBodyBytes)
                switch FCMAnswer.classify(status: answer.status, error: error) {
                case .accepted:
                    logger.trace("FCM accepted", metadata: ["delivery.id": "\(first.id)", "fcm.attempt": "\(attempt + 1)"])
                    return .delivered
                case .invalidToken:
                    let reported = reason ?? "HTTP \(answer.status)"
                    if deadTokens.value(for: token) == nil {
                        deadTokens.set(DeadToken(status: answer.status, reason: reported), for: token)
                        logger.notice("FCM reports the registration token dead", metadata: [
                            "fcm.token": "\(Redact.token(token))", "delivery.id": "\(first.id)", "fcm.reason": "\(reported)",
                        ])
                        await onInvalidToken(token, reported)
                    }
                    return .tokenDead(status: answer.status, reason: why)
                case .rejected:
                    await deadLetters.record(message.deliveries.map(\.delivery), status: answer.status, body: why)
                    logger.warning("FCM refused a message; dead-lettered", metadata: [
                        "delivery.id": "\(first.id)", "fcm.status": "\(answer.status)", "fcm.reason": "\(why.prefix(200))",
                    ])
                    return .deadLettered
                case .unauthenticated where !refreshed:
                    refreshed = true
                    logger.notice("FCM refused the access token; resending with a new one", metadata: ["delivery.id": "\(first.id)"])
                    do {
                        _ = try await accessTokens.refresh(rejecting: accessToken)
                    } catch let error as FCMError {
                        return .noAccessToken(error)
                    }
                    continue
                case .unauthenticated:
                    // A token just granted was refused too: the account lacks the right, or FCM's view of it is
                    // broken. Backing off with the same token cannot help; the caller keeps the deliveries, and the
                    // next batch starts with a refresh again.
                    logger.error("FCM refused a new access token too", metadata: ["delivery.id": "\(first.id)", "fcm.reason": "\(why.prefix(200))"])
                    return .gaveUp(problem: "HTTP 401 for a new access token (\(reason ?? "no reason"))")
                case .throttled, .serverError:
                    problem = "HTTP \(answer.status) \(reason ?? "")"
                    retryAfter = RetryPolicy.retryAfter(answer.retryAfter, now: now())
                }
            } catch {
                if error is CancellationError || Task.isCancelled { throw CancellationError() }
                let kind = FCMExchange.errorKind(error)
                metrics.requestError(kind: kind)
                problem = "\(kind): \(error)"
            }
            attempt += 1
            guard let delay = configuration.retry.delay(
                afterAttempt: attempt, retryAfter: retryAfter, elapsed: elapsed(), random: Double.random(in: 0..<1))
            else {
                logger.warning("FCM attempts exhausted", metadata: [
                    "delivery.id": "\(first.id)", "fcm.attempt": "\(attempt)", "fcm.last": "\(problem)",
                ])
                return .gaveUp(problem: problem)
            }
            logger.debug("FCM attempt failed; retrying", metadata: [
                "delivery.id": "\(first.id)", "fcm.attempt": "\(attempt)", "fcm.problem": "\(problem)", "fcm.delay": "\(delay)",
            ])
            try await clock.sleep(for: delay)
        }
    }

    /// What a dead letter keeps of a refusal: FCM's code and message (`UNREGISTERED: Requested entity was not
    /// found.`), or the start of a body that is not FCM's error JSON.
    static func reason(status: Int, error: FCMAnswer.ErrorBody?, body: [UInt8], limit: Int) -> String {
        if let error, let code = error.reason {
            let message = error.message.map { ": \($0)" } ?? ""
            let fields = error.fieldViolations.isEmpty ? "" : " [\(error.fieldViolations.joined(separator: ", "))]"
            return String((code + message + fields).prefix(limit))
        }
        let text = String(decoding: body.prefix(limit), as: UTF8.self)
        return text.isEmpty ? "HTTP \(status)" : text
    }
}
