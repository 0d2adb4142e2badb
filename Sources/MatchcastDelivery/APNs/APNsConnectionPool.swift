import Foundation
import Logging
import NIOCore
import NIOSSL
import Synchronization

/// HTTP/2 connections to one APNs endpoint and the queue of requests waiting for a stream.
///
/// Requests wait in one FIFO queue; each connection pulls as many as it has free streams (the
/// server's `SETTINGS_MAX_CONCURRENT_STREAMS`, capped by `maxStreamsPerConnection`) and pulls again
/// as answers free them, so no request waits on a busy connection while another has room. When
/// every open connection is full and requests still wait, one more is opened, up to
/// `maxConnections`, one set-up at a time.
///
/// Nothing here can hang a send: a connection must be ready (TCP, TLS with ALPN `h2`, the server's
/// first SETTINGS) within `connectTimeout`; a written request must be answered within
/// `requestTimeout`; when a set-up fails and no connection is left, every waiting request fails at
/// once. Set-up failures are reported (log, `matchcast_apns_connection_errors_total`, `isHealthy`)
/// and the next set-up waits a doubling backoff (100 ms up to 10 s). A request whose connection
/// closed (or sent GOAWAY, or refused the stream) before answering is sent once more, on another
/// connection, with the same `apns-id`; a request that got an answer is never sent again.
final class APNsConnectionPool: Sendable {
    struct Settings: Sendable {
        var host: String
        var port: Int
        /// `:authority`: `host` or `host:port`.
        var authority: String
        var tls: TLSConfiguration
        var maxConnections: Int
        var maxStreamsPerConnection: Int
        var connectTimeout: TimeAmount
        var requestTimeout: TimeAmount
        var initialConnectBackoff: TimeAmount = .milliseconds(100)
        var maxConnectBackoff: TimeAmount = .seconds(10)
    }

    /// A queued request: which job, which of its requests, and whether it was already resent once.
    struct Pending: Sendable {
        var job: APNsSendJob
        var index: Int
        var resent: Bool

        var request: APNsRequest { job.requests[index] }
    }

    /// Counters and health, for the sink's `isHealthy` and the benchmark.
    struct Statistics: Sendable {
        var open: Int
        var opened: Int
        var peakOpen: Int
        var failedSetups: Int
        var resent: Int
        var healthy: Bool
        var lastConnectError: String?
        /// The most requests in flight at once on one connection.
        var peakInFlight = 0
    }

    private struct Entry {
        var connection: APNsConnection.Reference
        var accepting = true
        /// Free streams at its last pull; 0 means it was full then (1 until its first pull).
        var free = 1
    }

    private struct State {
        var pending: [Pending] = []
        var head = 0
        var connections: [Int: Entry] = [:]
        /// Connections that found the queue empty with streams to spare.
        var waiting: [Int] = []
        var connecting = 0
        var nextID = 0
        var consecutiveFailures = 0
        var retryConnectAt: NIODeadline?
        var connectScheduled = false
        var shutdown = false
        var statistics = Statistics(open: 0, opened: 0, peakOpen: 0, failedSetups: 0, resent: 0, healthy: true)

        var queued: Int { pending.count - head }

        mutating func popFront() -> Pending? {
            guard head < pending.count else { return nil }
            let item = pending[head]
            head += 1
            if head == pending.count {
                pending.removeAll(keepingCapacity: true)
                head = 0
            } else if head >= 4096, head * 2 >= pending.count {
                pending.removeFirst(head)
                head = 0
            }
            return item
        }

        mutating func drainQueue() -> [Pending] {
            defer {
                pending.removeAll()
                head = 0
            }
            return Array(pending[head...])
        }
    }

    private enum ConnectPlan {
        case none
        case open(id: Int)
        case schedule(after: TimeAmount)
    }

    let settings: Settings
    let group: any EventLoopGroup
    let sslContext: NIOSSLContext
    let metrics: APNsMetrics
    let logger: Logger
    private let state = Mutex(State())

    init(settings: Settings, group: any EventLoopGroup, metrics: APNsMetrics, logger: Logger) throws {
        self.settings = settings
        self.group = group
        self.sslContext = try NIOSSLContext(configuration: settings.tls)
        self.metrics = metrics
        self.logger = logger
    }

    var statistics: Statistics { state.withLock { $0.statistics } }

    /// Sends every request and returns their results in order, once each is answered or has failed.
    /// Cancelling the calling task fails the requests not yet answered.
    func send(_ requests: [APNsRequest]) async -> [APNsExchange] {
        guard !requests.isEmpty else { return [] }
        let job = APNsSendJob(requests: requests)
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                job.wait(continuation)
                enqueue((0..<requests.count).map { Pending(job: job, index: $0, resent: false) }, atFront: false)
            }
        } onCancel: {
            job.cancel(APNsTransportError(kind: .cancelled, message: "send cancelled"))
        }
    }

    /// Closes every connection and fails whatever waits; later sends fail at once.
    func shutdown() {
        let (failed, connections) = state.withLock { state in
            state.shutdown = true
            state.waiting.removeAll()
            return (state.drainQueue(), state.connections.values.map(\.connection))
        }
        fail(failed, APNsTransportError(kind: .cancelled, message: "APNs sender shut down"))
        for connection in connections { connection.close() }
    }

    // MARK: - Called by connections, on their event loops

    /// Up to `max` queued requests for connection `id`.
    func take(for id: Int, max: Int) -> [Pending] {
        var taken: [Pending] = []
        taken.reserveCapacity(Swift.min(max, 1024))
        let plan: ConnectPlan = state.withLock { state in
            while taken.count < max, let item = state.popFront() {
                if item.job.isCancelled { continue }
                taken.append(item)
            }
            state.connections[id]?.free = max - taken.count
            if taken.count < max, state.connections[id]?.accepting == true, !state.waiting.contains(id) {
                state.waiting.append(id)
            }
            return planConnect(&state)
        }
        perform(plan)
        return taken
    }

    func connectionReady(id: Int, connection: APNsConnection.Reference) {
        let (reconnected, shutdown) = state.withLock { state -> (Bool, Bool) in
            state.connecting -= 1
            guard !state.shutdown else { return (false, true) }
            state.connections[id] = Entry(connection: connection)
            let reconnected = !state.statistics.healthy
            state.consecutiveFailures = 0
            state.retryConnectAt = nil
            state.statistics.healthy = true
            state.statistics.opened += 1
            state.statistics.open = state.connections.count
            state.statistics.peakOpen = Swift.max(state.statistics.peakOpen, state.connections.count)
            return (reconnected, false)
        }
        if shutdown {
            connection.close()
            return
        }
        metrics.openConnections(statistics.open)
        if reconnected { logger.notice("APNs connection set up again", metadata: ["apns.connection": "\(id)"]) }
    }

    /// A set-up failed (or timed out). Reported, and the next one waits a backoff; when no connection
    /// is left, every waiting request fails now rather than waiting for it.
    func connectFailed(id: Int, kind: String, message: String) {
        let (failed, plan, failures) = state.withLock { state -> ([Pending], ConnectPlan, Int) in
            state.connecting -= 1
            state.consecutiveFailures += 1
            state.statistics.failedSetups += 1
            state.statistics.healthy = false
            state.statistics.lastConnectError = message
            state.retryConnectAt = .now() + backoff(afterFailures: state.consecutiveFailures)
            let live = state.connections.values.contains { $0.accepting }
            let failed = live ? [] : state.drainQueue()
            return (failed, planConnect(&state), state.consecutiveFailures)
        }
        metrics.connectionError(kind: kind)
        logger.error("APNs connection set-up failed", metadata: [
            "apns.connection": "\(id)", "apns.error": "\(message)", "apns.kind": "\(kind)",
            "apns.consecutive_failures": "\(failures)", "apns.failed_requests": "\(failed.count)",
        ])
        fail(failed, APNsTransportError(kind: kind == "connect_timeout" ? .connectTimeout : .connect, message: message))
        perform(plan)
    }

    /// A connection stopped answering, or broke: reported, like a failed set-up, but without backoff.
    func connectionBroke(id: Int, kind: String, message: String) {
        state.withLock { state in
            state.statistics.healthy = false
            state.statistics.lastConnectError = message
        }
        metrics.connectionError(kind: kind)
        logger.error("APNs connection failed", metadata: ["apns.connection": "\(id)", "apns.error": "\(message)", "apns.kind": "\(kind)"])
    }

    /// A connection reached `count` requests in flight, more than it ever had.
    func noteInFlight(_ count: Int) {
        state.withLock { $0.statistics.peakInFlight = Swift.max($0.statistics.peakInFlight, count) }
    }

    /// The server sent GOAWAY: no new requests go to `id`.
    func connectionDraining(id: Int) {
        let plan = state.withLock { state -> ConnectPlan in
            state.connections[id]?.accepting = false
            state.waiting.removeAll { $0 == id }
            return planConnect(&state)
        }
        perform(plan)
    }

    /// Requests that connection `id` wrote but that got no answer because the connection (or the
    /// server, by GOAWAY or REFUSED_STREAM) dropped them: each is resent once, ahead of the queue;
    /// one already resent fails.
    func resend(_ items: [Pending], from id: Int) {
        guard !items.isEmpty else { return }
        var again: [Pending] = []
        var failed: [Pending] = []
        for var item in items where !item.job.isCancelled {
            if item.resent {
                failed.append(item)
            } else {
                item.resent = true
                again.append(item)
            }
        }
        if !again.isEmpty {
            state.withLock { $0.statistics.resent += again.count }
            metrics.resent(count: again.count)
            logger.debug("APNs requests resent after their connection dropped them", metadata: [
                "apns.connection": "\(id)", "apns.count": "\(again.count)",
            ])
            enqueue(again, atFront: true)
        }
        fail(failed, APNsTransportError(kind: .connectionClosed, message: "connection closed before an answer, twice"))
    }

    func connectionClosed(id: Int, unanswered: [Pending]) {
        let plan = state.withLock { state -> ConnectPlan in
            state.connections[id] = nil
            state.waiting.removeAll { $0 == id }
            state.statistics.open = state.connections.count
            return planConnect(&state)
        }
        metrics.openConnections(statistics.open)
        resend(unanswered, from: id)
        perform(plan)
    }

    // MARK: - Queue and set-up decisions

    private func enqueue(_ items: [Pending], atFront: Bool) {
        let (rejected, wake, plan) = state.withLock { state -> ([Pending], [APNsConnection.Reference], ConnectPlan) in
            guard !state.shutdown else { return (items, [], .none) }
            if atFront {
                state.pending.insert(contentsOf: items, at: state.head)
            } else {
                state.pending.append(contentsOf: items)
            }
            let wake = state.waiting.compactMap { state.connections[$0]?.connection }
            // Woken connections had room at their last pull; count them as having it until they pull.
            for id in state.waiting {
                let free = state.connections[id]?.free ?? 0
                state.connections[id]?.free = Swift.max(free, 1)
            }
            state.waiting.removeAll()
            return ([], wake, planConnect(&state))
        }
        fail(rejected, APNsTransportError(kind: .cancelled, message: "APNs sender shut down"))
        for connection in wake { connection.wake() }
        perform(plan)
    }

    /// Opens one more connection when requests wait, every accepting connection was full at its last
    /// pull, none is being set up, and the bound allows; after a failed set-up, not before its backoff.
    private func planConnect(_ state: inout State) -> ConnectPlan {
        guard !state.shutdown, state.queued > 0, state.connecting == 0 else { return .none }
        let accepting = state.connections.values.filter(\.accepting)
        guard accepting.count < settings.maxConnections, accepting.allSatisfy({ $0.free == 0 }) else { return .none }
        if let at = state.retryConnectAt, at > .now() {
            guard !state.connectScheduled else { return .none }
            state.connectScheduled = true
            return .schedule(after: at - .now())
        }
        state.connecting += 1
        state.nextID += 1
        return .open(id: state.nextID)
    }

    private func perform(_ plan: ConnectPlan) {
        switch plan {
        case .none:
            break
        case .open(let id):
            APNsConnection.open(id: id, pool: self, on: group.next())
        case .schedule(let delay):
            group.next().scheduleTask(in: delay) { [self] in
                let plan = state.withLock { state -> ConnectPlan in
                    state.connectScheduled = false
                    state.retryConnectAt = nil
                    return planConnect(&state)
                }
                perform(plan)
            }
        }
    }

    private func backoff(afterFailures failures: Int) -> TimeAmount {
        let doublings = Swift.min(Swift.max(failures - 1, 0), 20)
        let base = Swift.min(settings.initialConnectBackoff.nanoseconds << doublings, settings.maxConnectBackoff.nanoseconds)
        // Up to a fifth off at random, so that many senders do not reconnect in step.
        return .nanoseconds(base - Int64(Double(base) * 0.2 * Double.random(in: 0..<1)))
    }

    private func fail(_ items: [Pending], _ error: APNsTransportError) {
        for item in items { item.job.complete(item.index, with: .failed(error)) }
    }
}

extension APNsConnectionPool.Settings {
    /// Settings for an `https://host[:port]` URL (an IPv6 literal loses its brackets for the
    /// socket, keeps them in `:authority`); nil for a URL without a host.
    init?(
        url: URL, tls: TLSConfiguration, maxConnections: Int, maxStreamsPerConnection: Int,
        connectTimeout: Duration, requestTimeout: Duration
    ) {
        guard let host = url.host, !host.isEmpty else { return nil }
        let port = url.port ?? 443
        self.init(
            host: host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host,
            port: port, authority: url.port == nil ? host : "\(host):\(port)", tls: tls,
            maxConnections: maxConnections, maxStreamsPerConnection: maxStreamsPerConnection,
            connectTimeout: .nanoseconds(connectTimeout.wholeNanoseconds),
            requestTimeout: .nanoseconds(requestTimeout.wholeNanoseconds))
    }
}
