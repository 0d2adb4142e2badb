#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import ArgumentParser
import Crypto
import Foundation
import MatchcastCore
import MatchcastDelivery

/// `matchcast-bench webpush-crypto`: what a Web Push message costs to make, on one core.
///
/// Web Push encrypts every message for its subscription (RFC 8291: a fresh P-256 key and ECDH with the browser's key,
/// HKDF, AES-128-GCM), so a fan-out to N browsers does N key agreements where APNs and FCM send one shared payload.
/// This measures that work alone, on the calling thread, with its thread CPU time: no network, no push service.
struct WebPushCryptoBenchCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webpush-crypto",
        abstract: "Measure what making one Web Push message costs, per second of one core.",
        discussion: """
            Makes --messages Web Push messages on one thread for --subscriptions browsers (their P-256 keys and auth \
            secrets made up front), each carrying the live surface of a real rendered update (docs/formats.md, \
            "Live surface"), and prints per second of that thread's CPU: the surface rendered to its JSON body, the \
            body encrypted (RFC 8291), a VAPID token signed (RFC 8292, ES256), and a whole message as \
            WebPushMessage makes it (encryption and a token each), and the same with the push service's VAPID token \
            reused (VAPIDTokenCache, as the Web Push sink sends). See docs/performance.md.

            Example:
              .build/release/matchcast-bench webpush-crypto --messages 20000
            """
    )

    @Option(help: "Messages made in each measured step.")
    var messages = 20_000

    @Option(help: "Browsers the messages go to, in turn.")
    var subscriptions = 1_000

    func validate() throws {
        guard (1...10_000_000).contains(messages) else { throw ValidationError("--messages must be 1 to 10,000,000") }
        guard (1...100_000).contains(subscriptions) else { throw ValidationError("--subscriptions must be 1 to 100,000") }
    }

    func run() throws {
        let browsers = (0..<subscriptions).map { index in
            WebPushMessage.Subscription(
                endpoint: URL(string: "https://push.example.net/p/\(index)")!,
                p256dh: P256.KeyAgreement.PrivateKey().publicKey.x963Representation,
                auth: Data((0..<16).map { _ in UInt8.random(in: 0...255) }))
        }
        let vapid = try VAPIDCredentials(privateKey: P256.Signing.PrivateKey(), subject: "mailto:bench@example.com")
        let surface = try Self.surface()
        let now = Date()
        let body = try surface.webPushPayload(now: now).body
        let topic = WebPushMessage.topic(forMatch: surface.matchId)

        var bytes = 0
        let rendered = Self.measure(messages) { _ in bytes &+= (try? surface.webPushPayload(now: now).body.count) ?? 0 }
        let encrypted = try Self.measureThrowing(messages) { index in
            let browser = browsers[index % browsers.count]
            bytes &+= try WebPushEncryption.encrypt(body, userAgentPublicKey: browser.p256dh, authSecret: browser.auth).count
        }
        let signed = try Self.measureThrowing(messages) { index in
            bytes &+= try vapid.authorization(for: browsers[index % browsers.count].endpoint, now: now).value.utf8.count
        }
        let whole = try Self.measureThrowing(messages) { index in
            let message = try WebPushMessage(
                payload: body, to: browsers[index % browsers.count], vapid: vapid, ttl: 300, urgency: .high, topic: topic,
                now: now)
            bytes &+= message.body.count
        }
        let tokens = VAPIDTokenCache(vapid: vapid)
        let reusing = try Self.measureThrowing(messages) { index in
            let message = try WebPushMessage(
                payload: body, to: browsers[index % browsers.count], vapid: vapid, ttl: 300, urgency: .high, topic: topic,
                now: now, vapidTokens: tokens)
            bytes &+= message.body.count
        }
        var report = "webpush-crypto: \(messages) messages a step, \(subscriptions) subscriptions, a \(body.count)-byte body "
        report += "(\(bytes) bytes made in all)\n"
        report += "step                          per s of one core   µs each (thread CPU)\n"
        for (name, seconds) in [
            ("surface → JSON body", rendered), ("encrypt (RFC 8291)", encrypted), ("VAPID token (ES256)", signed),
            ("whole message", whole), ("whole message, token reused", reusing),
        ] {
            let each = seconds / Double(messages)
            report += name.padding(toLength: 30, withPad: " ", startingAt: 0)
                + String(format: "%17.0f   %8.1f\n", 1 / each, each * 1_000_000)
        }
        FileHandle.standardError.write(Data(report.utf8))
    }

    /// A real update's surface: the built-in fake cricket match rendered mid-chase.
    static func surface() throws -> LiveSurface {
        let snapshot = MatchSnapshot(
            id: "ipl-2026-m41", sport: .cricket, status: .live, competition: "Indian Premier League",
            home: Team(id: "mi", name: "Mumbai Indians", short: "MI"),
            away: Team(id: "csk", name: "Chennai Super Kings", short: "CSK"),
            score: .cricket(CricketScore(
                format: .t20, oversLimit: 20,
                innings: [
                    .init(team: "mi", runs: 197, wickets: 4, balls: 120),
                    .init(team: "csk", runs: 87, wickets: 6, balls: 86, target: 198),
                ],
                batters: [.init(name: "Shivam Dube", runs: 12, balls: 9, onStrike: true), .init(name: "MS Dhoni", runs: 4, balls: 3)],
                bowler: .init(name: "Jasprit Bumrah", balls: 20, runs: 18, wickets: 2))))
        let rendered = try MatchRenderer.render(snapshot)
        return LiveSurface(
            matchId: snapshot.id, event: .update, contentState: rendered.contentState, sport: .cricket,
            isKeyMoment: true, timestamp: Int(Date().timeIntervalSince1970), staleDate: Int(Date().timeIntervalSince1970) + 300,
            deepLink: "matchcast://match/ipl-2026-m41")
    }

    /// Thread CPU seconds `count` calls of `body` took.
    static func measure(_ count: Int, _ body: (Int) -> Void) -> Double {
        let start = threadCPUSeconds()
        for index in 0..<count { body(index) }
        return threadCPUSeconds() - start
    }

    static func measureThrowing(_ count: Int, _ body: (Int) throws -> Void) throws -> Double {
        let start = threadCPUSeconds()
        for index in 0..<count { try body(index) }
        return threadCPUSeconds() - start
    }

    static func threadCPUSeconds() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1_000_000_000
    }
}
