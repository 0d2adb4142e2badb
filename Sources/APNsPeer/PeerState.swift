import NIOCore
import NIOHTTP2
import Synchronization

/// One accepted connection: its channel (to write SETTINGS and GOAWAY on) and its open streams.
final class PeerConnection: Sendable {
    let number: Int
    let channel: any Channel
    private let open = Mutex<Set<Int>>([])

    init(number: Int, channel: any Channel) {
        self.number = number
        self.channel = channel
    }

    var openStreamIDs: Set<Int> { open.withLock { $0 } }

    /// Notes a new stream; returns how many are open now, it included.
    func opened(_ stream: Int) -> Int { open.withLock { $0.insert(stream); return $0.count } }

    func closed(_ stream: Int) { open.withLock { _ = $0.remove(stream) } }
}

/// What the connections and the test share.
final class PeerState: Sendable {
    struct Counts {
        var requests = 0
        var statuses: [Int: Int] = [:]
        var resets = 0
        var connections = 0
        var peakOpen = 0
        var peakOpenSinceSettings = 0
        var settingsChanged = false
        /// With `recording` only.
        var requestsByID: [String: Int] = [:]
        var acceptedByID: [String: Int] = [:]
    }

    let configuration: APNsPeer.Configuration
    private let values = Mutex(Counts())
    private let connections = Mutex<[Int: PeerConnection]>([:])
    private let log = Mutex<[APNsPeer.Request]>([])
    /// While true, requests wait in `held` (each a way to answer it on its own event loop).
    private let holding = Mutex<(on: Bool, held: [@Sendable () -> Void])>((false, []))

    init(configuration: APNsPeer.Configuration) {
        self.configuration = configuration
    }

    var counts: Counts { values.withLock { $0 } }
    var recorded: [APNsPeer.Request] { log.withLock { $0 } }
    var connectionList: [PeerConnection] { connections.withLock { $0.values.sorted { $0.number < $1.number } } }

    func accepted(_ channel: any Channel) -> PeerConnection {
        let number = values.withLock { $0.connections += 1; return $0.connections }
        let connection = PeerConnection(number: number, channel: channel)
        connections.withLock { $0[number] = connection }
        channel.closeFuture.whenComplete { [self] _ in _ = connections.withLock { $0.removeValue(forKey: number) } }
        return connection
    }

    func streamOpened(on connection: PeerConnection, stream: Int) {
        let open = connection.opened(stream)
        values.withLock { counts in
            counts.peakOpen = max(counts.peakOpen, open)
            if counts.settingsChanged { counts.peakOpenSinceSettings = max(counts.peakOpenSinceSettings, open) }
        }
    }

    func noteSettingsChange(_ settings: [(HTTP2SettingsParameter, Int)]) {
        values.withLock { counts in
            counts.settingsChanged = true
            counts.peakOpenSinceSettings = 0
        }
    }

    /// Answers `request` (its shape checked first, then `configuration.answer`) through `respond`: now, or on
    /// `eventLoop` once `release()` lets it go while requests are held.
    func answer(_ request: APNsPeer.Request, on eventLoop: any EventLoop,
                respond: NIOLoopBound<(APNsPeer.Answer) -> Void>) {
        let answer = request.shapeProblem ?? configuration.answer(request)
        let held = arrived(request) { eventLoop.execute { respond.value(answer) } }
        if !held { respond.value(answer) }
    }

    /// Counts a request; false to answer it now, true when `answer` is held for `release()`.
    private func arrived(_ request: APNsPeer.Request, answer: @escaping @Sendable () -> Void) -> Bool {
        values.withLock { counts in
            counts.requests += 1
            if configuration.recording, let id = request.apnsID { counts.requestsByID[id, default: 0] += 1 }
        }
        if configuration.recording { log.withLock { $0.append(request) } }
        return holding.withLock { state in
            guard state.on else { return false }
            state.held.append(answer)
            return true
        }
    }

    private func answered(_ request: APNsPeer.Request, status: Int) {
        values.withLock { counts in
            counts.statuses[status, default: 0] += 1
            if status == 200, configuration.recording, let id = request.apnsID { counts.acceptedByID[id, default: 0] += 1 }
        }
        configuration.onAnswer?(request, status)
    }

    private func reset() { values.withLock { $0.resets += 1 } }

    /// An answer went out: `status`, or a reset when nil.
    func settled(_ request: APNsPeer.Request, status: Int?) {
        if let status { answered(request, status: status) } else { reset() }
    }

    func setHolding(_ on: Bool) {
        let released: [@Sendable () -> Void] = holding.withLock { state in
            state.on = on
            guard !on else { return [] }
            defer { state.held = [] }
            return state.held
        }
        for answer in released { answer() }
    }
}
