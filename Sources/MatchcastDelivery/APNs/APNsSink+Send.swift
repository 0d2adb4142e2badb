import Foundation
import Logging
import MatchcastCore
import NIOCore

extension APNsSink {
    /// Where one token's deliveries stand.
    private struct Progress {
        var queue: TokenQueue
        /// The delivery being sent.
        var next = 0
        /// Failed attempts of that delivery.
        var attempt = 0
        /// Its provider token was already replaced once after `ExpiredProviderToken`.
        var refreshed = false
        /// When its first attempt began (stopwatch time).
        var firstAttempt: Duration?
        /// Not sent again before this (stopwatch time).
        var readyAt: Duration = .zero
        var done = false
        var result = QueueResult()

        var item: Item { queue.items[next] }

        /// Whether the delivery being sent goes to a broadcast channel, read in place (`item` is a copy of the whole
        /// item: a retain of each of its references).
        var isChannel: Bool { queue.items[next].delivery.target.kind == .channel }

        mutating func advance() {
            next += 1
            attempt = 0
            refreshed = false
            firstAttempt = nil
            readyAt = .zero
            done = next == queue.items.count
        }
    }

    /// Requests handed to the pool at once: small enough that the first are answered while the
    /// rest of a large round is built, large enough that the pool's queue is never short of work.
    static var sendChunk: Int { 4096 }

    /// The shared header fields of device pushes, one head per distinct set (the last one checked
    /// first: the requests of one update come one after another).
    private struct HeadCache {
        private struct Key: Hashable {
            var jwt: String
            var pushType: String
            var topic: String
            var priority: Int
            var expiration: Int
        }

        private var heads: [Key: APNsRequestHead] = [:]
        private var last: (key: Key, head: APNsRequestHead)?

        mutating func head(jwt: String, apns: APNsHeaders) -> APNsRequestHead {
            let key = Key(jwt: jwt, pushType: apns.pushType, topic: apns.topic, priority: apns.priority, expiration: apns.expiration)
            if let last, last.key == key { return last.head }
            let head = heads[key] ?? APNsRequestHead(
                authorization: jwt, pushType: apns.pushType, topic: apns.topic, priority: apns.priority, expiration: apns.expiration)
            heads[key] = head
            last = (key, head)
            return head
        }
    }

    /// A device push, `POST /3/device/<token>`, or a broadcast (APNsSink+Broadcast.swift).
    /// `item` is borrowed: each request of a round reads its item where it is kept, without a copy of it.
    private static func request(
        for item: borrowing Item, token: CompactToken, jwt: String, heads: inout HeadCache
    ) -> APNsRequest {
        guard item.delivery.target.kind != .channel else { return broadcastRequest(copy item, jwt: jwt) }
        return APNsRequest(
            head: heads.head(jwt: jwt, apns: item.delivery.apns), path: devicePath(token), apnsID: item.apnsID,
            body: item.body)
    }

    /// `/3/device/<token>`, written in one string from the token as kept.
    static func devicePath(_ token: CompactToken) -> String {
        let prefix: StaticString = "/3/device/"
        return token.withUTF8 { digits in
            String(unsafeUninitializedCapacity: prefix.utf8CodeUnitCount + digits.count) { out in
                let start = UnsafeBufferPointer(start: prefix.utf8Start, count: prefix.utf8CodeUnitCount)
                _ = out.initialize(fromContentsOf: start)
                _ = out[start.count...].initialize(fromContentsOf: digits)
                return start.count + digits.count
            }
        }
    }

    /// Sends every token's deliveries, each token's in order, in rounds: every token with a delivery
    /// due goes into one `pool.send`; then each answer moves its token on (next delivery, dead, retry
    /// after a backoff). When no token is due, the sink sleeps on `clock` until the first is.
    func send(_ queues: [TokenQueue]) async throws -> QueueResult {
        let elapsed = Stopwatch.start(clock)
        var progress = queues.map { Progress(queue: $0) }
        var active = Array(progress.indices)
        var heads = HeadCache()
        while !active.isEmpty {
            try Task.checkCancellation()
            let now = elapsed()
            let due = active.filter { progress[$0].readyAt <= now }
            guard !due.isEmpty else {
                let wake = active.lazy.map { progress[$0].readyAt }.min()!
                try await clock.sleep(for: wake - now)
                continue
            }
            let providerToken: APNsProviderToken
            do {
                providerToken = try signer.currentToken()
            } catch {
                for index in due { giveUp(&progress[index], problem: "provider token signing failed") }
                active.removeAll { progress[$0].done }
                continue
            }
            // The round goes out in chunks: the first requests are on the wire while later ones are built.
            var exchanges = [APNsExchange?](repeating: nil, count: due.count)
            await withTaskGroup(of: (Int, [APNsExchange]).self) { group in
                var first = 0
                while first < due.count {
                    let end = min(first + Self.sendChunk, due.count)
                    var requests: [APNsRequest] = []
                    requests.reserveCapacity(end - first)
                    for index in due[first..<end] {
                        if progress[index].firstAttempt == nil { progress[index].firstAttempt = now }
                        requests.append(Self.request(
                            for: progress[index].queue.items[progress[index].next], token: progress[index].queue.token,
                            jwt: providerToken.jwt, heads: &heads))
                    }
                    let offset = first
                    group.addTask { [pool] in (offset, await pool.send(requests)) }
                    first = end
                }
                for await (offset, results) in group {
                    for (position, result) in results.enumerated() { exchanges[offset + position] = result }
                }
            }
            if Task.isCancelled { throw CancellationError() }

            var answers: [AnswerKey: Int] = [:]
            var errors: [String: Int] = [:]
            var byToken: [(token: CompactToken, status: Int, reason: String?)] = []
            byToken.reserveCapacity(due.count)
            for (position, index) in due.enumerated() {
                switch exchanges[position]! {
                case .answered(let response):
                    let reason = APNsAnswer.reason(fromBody: response.body)
                    answers[AnswerKey(status: response.status, reason: reason), default: 0] += 1
                    if !progress[index].isChannel {
                        byToken.append((progress[index].queue.token, response.status, reason))
                    }
                    await handle(response, reason: reason, for: &progress[index], providerToken: providerToken, elapsed: elapsed)
                case .failed(let error) where error.kind == .cancelled:
                    // The sink was shut down: no retry could succeed.
                    giveUp(&progress[index], problem: "\(error)")
                case .failed(let error):
                    let kind = APNsAnswer.errorKind(error)
                    errors[kind, default: 0] += 1
                    let problem = "\(kind == "timeout" ? "timeout" : "connection error"): \(error)"
                    retryLater(&progress[index], problem: problem, retryAfter: nil, elapsed: elapsed)
                }
            }
            self.answers.record(byToken, at: self.now())
            for (key, count) in answers { metrics.response(status: key.status, reason: key.reason, count: count) }
            for (kind, count) in errors { metrics.requestError(kind: kind, count: count) }
            active.removeAll { progress[$0].done }
        }
        var total = QueueResult()
        for entry in progress { total.merge(entry.result) }
        return total
    }

    private struct AnswerKey: Hashable {
        var status: Int
        var reason: String?
    }

    /// What one answer means for its token.
    private func handle(
        _ response: APNsResponse, reason: String?, for progress: inout Progress, providerToken: APNsProviderToken,
        elapsed: @Sendable () -> Duration
    ) async {
        let verdict = APNsAnswer.classify(status: response.status, reason: reason)
        // The usual answer needs nothing of the delivery: it is copied out only for the others.
        if case .accepted = verdict {
            progress.result.delivered += 1
            progress.advance()
            return
        }
        let delivery = progress.item.delivery
        switch verdict {
        case .accepted:
            break
        case .invalidToken where delivery.target.kind != .channel:
            let why = reason ?? "HTTP \(response.status)"
            logger.notice("APNs reports the device token dead", metadata: [
                "apns.token": "\(progress.queue.token)", "delivery.id": "\(delivery.id)", "apns.reason": "\(why)",
            ])
            await onInvalidToken(progress.queue.token.string, why)
            progress.result.invalid += progress.queue.items.count - progress.next
            progress.done = true
        case .rejected, .invalidToken:
            // A refused channel is not a dead token either: the broker deletes channels on its own schedule.
            await deadLetters.record([delivery], status: response.status, body: String(decoding: response.body, as: UTF8.self))
            logger.warning("APNs refused a delivery; dead-lettered", metadata: [
                "delivery.id": "\(delivery.id)", "apns.status": "\(response.status)",
                "apns.body": "\(String(decoding: response.body.prefix(200), as: UTF8.self))",
            ])
            progress.result.deadLettered += 1
            progress.advance()
        case .expiredProviderToken:
            if !progress.refreshed, let fresh = try? signer.refresh(rejecting: providerToken), fresh != providerToken {
                progress.refreshed = true
                progress.readyAt = .zero
                logger.notice("APNs called the provider token expired; retrying with a new one", metadata: ["delivery.id": "\(delivery.id)"])
                return
            }
            retryLater(&progress, problem: "HTTP 403 ExpiredProviderToken", retryAfter: nil, elapsed: elapsed)
        case .throttled:
            let retryAfter = response.retryAfter.flatMap(Int64.init).map { Duration.seconds(max(0, $0)) }
            retryLater(&progress, problem: "HTTP 429 \(reason ?? "")", retryAfter: retryAfter, elapsed: elapsed)
        case .serverError:
            retryLater(&progress, problem: "HTTP \(response.status) \(reason ?? "")", retryAfter: nil, elapsed: elapsed)
        }
    }

    /// Schedules the token's next attempt after a backoff, or gives up when the policy says so.
    private func retryLater(_ progress: inout Progress, problem: String, retryAfter: Duration?, elapsed: @Sendable () -> Duration) {
        progress.attempt += 1
        let now = elapsed()
        let delay = configuration.retry.delay(
            afterAttempt: progress.attempt, retryAfter: retryAfter, elapsed: now - (progress.firstAttempt ?? now),
            random: Double.random(in: 0..<1))
        guard let delay else {
            logger.warning("APNs attempts exhausted", metadata: [
                "apns.token": "\(progress.queue.token)", "delivery.id": "\(progress.item.delivery.id)",
                "apns.attempt": "\(progress.attempt)", "apns.last": "\(problem)",
            ])
            giveUp(&progress, problem: problem)
            return
        }
        logger.debug("APNs attempt failed; retrying", metadata: [
            "delivery.id": "\(progress.item.delivery.id)", "apns.attempt": "\(progress.attempt)",
            "apns.problem": "\(problem)", "apns.delay": "\(delay)",
        ])
        progress.readyAt = now + delay
    }

    /// The token's remaining deliveries go back to the caller, in order.
    private func giveUp(_ progress: inout Progress, problem: String) {
        progress.result.undelivered = progress.queue.items[progress.next...].map(\.delivery)
        progress.result.failedQueues = 1
        progress.result.problem = problem
        progress.done = true
    }
}
