import Foundation
import NIOCore
import Synchronization

extension FakeAPNsServer {
    /// What the connections and the test share, under one lock.
    final class SharedState: Sendable {
        struct Values {
            var stickyFaults: [String: Failure] = [:]
            var tokenFaults: [String: [Failure]] = [:]
            var faults: [Failure] = []
            var providerTokensSeen: Set<String> = []
            var expiredProviderTokens: Set<String> = []
            var accepted: [Notification] = []
            var log: [Exchange] = []
            var answering = true
            var errorBodyFrames = 1
            var dropConnection: [String: Int] = [:]
            /// Requests per `apns-id`, and whether one got a final answer (not 429, 5xx or an expired provider token).
            var perID: [String: (requests: Int, final: Bool)] = [:]
            var duplicates = 0
            var requests = 0
            var acceptedCount = 0
            var statusCounts: [Int: Int] = [:]
            var connections = 0
            var peakStreams = 0
            var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
            var holders: [Holder] = []
            var verifications = 0
            /// Share of tokens (by a hash of the token) always answered 410, and share whose first
            /// request per `apns-id` is answered 429: the benchmark's error mix.
            var invalidShare = 0.0
            var throttledShare = 0.0
            var recordArrivals = false
            var arrivals: [ContinuousClock.Instant] = []
            /// Broadcast channels and broadcasts (`FakeAPNsServer+Channels.swift`).
            var channels = ChannelBook()
        }

        /// A connection holding unanswered requests, to be told when answering resumes.
        struct Holder: Sendable {
            let eventLoop: any EventLoop
            let release: @Sendable () -> Void
        }

        /// What a connection does with one request.
        enum Action {
            case answer(status: Int, reason: String?)
            case hold
            case dropConnection
        }

        let verifier: ProviderTokenVerifier
        let recording: Bool
        private let values = Mutex(Values())

        init(verifier: ProviderTokenVerifier, recording: Bool) {
            self.verifier = verifier
            self.recording = recording
        }

        func locked<T>(_ body: (inout Values) -> T) -> T {
            values.withLock { body(&$0) }
        }

        /// Counts an arriving request (before any decision) and wakes tests waiting for that many.
        func arrived() {
            let ready: [CheckedContinuation<Void, Never>] = values.withLock { values in
                values.requests += 1
                let count = values.requests
                let ready = values.waiters.filter { $0.count <= count }.map(\.continuation)
                values.waiters.removeAll { $0.count <= count }
                return ready
            }
            for continuation in ready { continuation.resume() }
        }

        /// Decides the answer to a checked request and records it, in one step so that concurrent
        /// requests take queued faults in arrival order.
        func decide(_ checked: RequestCheck.Checked, body: ByteBuffer, connection: Int, holder: Holder) -> Action {
            values.withLock { values in
                if !values.dropConnection.isEmpty, let token = checked.token, let left = values.dropConnection[token], left > 0 {
                    values.dropConnection[token] = left > 1 ? left - 1 : nil
                    if recording {
                        values.log.append(Exchange(
                            token: checked.token, apnsID: checked.apnsID, providerToken: checked.providerToken, status: 0,
                            reason: "ConnectionDropped", connection: connection))
                    }
                    return .dropConnection
                }
                guard values.answering else {
                    values.holders.append(holder)
                    return .hold
                }
                var status = 200
                var reason: String?
                if let jwt = checked.providerToken, recording || !values.expiredProviderTokens.isEmpty {
                    values.providerTokensSeen.insert(jwt)
                }
                if values.recordArrivals { values.arrivals.append(.now) }
                switch checked.result {
                case .failure(let refusal):
                    (status, reason) = (refusal.status, refusal.reason)
                case .success(var notification):
                    if let failure = Self.takeFault(for: notification, from: &values) ?? Self.planned(for: notification, in: values) {
                        (status, reason) = (failure.status, failure.reason)
                    } else {
                        values.acceptedCount += 1
                        if recording {
                            notification.body = Array(body.readableBytesView)
                            values.accepted.append(notification)
                        }
                    }
                }
                values.statusCounts[status, default: 0] += 1
                if recording {
                    values.log.append(Exchange(
                        token: checked.token, apnsID: checked.apnsID, providerToken: checked.providerToken, status: status,
                        reason: reason, connection: connection))
                }
                if let id = checked.apnsID {
                    let retryable = status == 429 || status >= 500 || reason == "ExpiredProviderToken"
                    // One lookup: the entry is changed in place.
                    func count(_ entry: inout (requests: Int, final: Bool)) -> Bool {
                        let duplicate = entry.final
                        entry.requests += 1
                        entry.final = entry.final || !retryable
                        return duplicate
                    }
                    if count(&values.perID[id, default: (0, false)]) { values.duplicates += 1 }
                }
                return .answer(status: status, reason: reason)
            }
        }

        /// The fault this request meets, most specific first: an expired provider token, a fault for
        /// every request to its token, the next fault queued for its token, the next queued for anyone.
        private static func takeFault(for notification: Notification, from values: inout Values) -> Failure? {
            if !values.expiredProviderTokens.isEmpty, values.expiredProviderTokens.contains(notification.providerToken) {
                return .expiredProviderToken
            }
            if !values.stickyFaults.isEmpty, let sticky = values.stickyFaults[notification.token] { return sticky }
            if !values.tokenFaults.isEmpty, var queued = values.tokenFaults[notification.token], !queued.isEmpty {
                let failure = queued.removeFirst()
                values.tokenFaults[notification.token] = queued.isEmpty ? nil : queued
                return failure
            }
            if !values.faults.isEmpty { return values.faults.removeFirst() }
            return nil
        }

        /// The benchmark's error mix: a token whose hash falls in the first `invalidShare` is dead; one
        /// in the next `throttledShare` is throttled on the first request of each notification.
        private static func planned(for notification: Notification, in values: Values) -> Failure? {
            guard values.invalidShare > 0 || values.throttledShare > 0 else { return nil }
            var hash: UInt64 = 0xcbf2_9ce4_8422_2325
            for byte in notification.token.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
            let position = Double(hash % 1_000_000) / 1_000_000
            if position < values.invalidShare { return .unregistered }
            if position < values.invalidShare + values.throttledShare, values.perID[notification.apnsID] == nil {
                return .tooManyRequests
            }
            return nil
        }

        /// Answers again, releasing every held request.
        func resumeAnswering() {
            let holders: [Holder] = values.withLock { values in
                values.answering = true
                defer { values.holders.removeAll() }
                return values.holders
            }
            for holder in holders { holder.eventLoop.execute { holder.release() } }
        }

        func waitForRequests(_ count: Int) async {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now: Bool = values.withLock { values in
                    if values.requests >= count { return true }
                    values.waiters.append((count, continuation))
                    return false
                }
                if now { continuation.resume() }
            }
        }
    }
}
