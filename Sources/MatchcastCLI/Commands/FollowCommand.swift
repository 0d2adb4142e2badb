import ArgumentParser
import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastFeeds
import MatchcastService
import ServiceLifecycle

/// `matchcast follow <match> --feed <feed>`: the pushes one device would get, as the match goes on.
struct FollowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "follow",
        abstract: "Follow one match and print the Live Activity pushes a device would get.",
        discussion: """
            Polls the match at the interval the feed asks for and prints one Delivery per line (NDJSON, \
            docs/formats.md#deliveries): a `start`, then every change (key events at priority 10 with an alert, routine \
            changes at priority 5), then an `end` when the match is final, and exits 0. A feed that cannot \
            be reached is retried with backoff and reported on stderr. Ctrl-C stops cleanly.

            FEED is a native v1 base URL (http://host:port), `fake[?speed=N&seed=S]` for the built-in fake \
            feed (matches: cricket-t20, tennis-bo3, football), `mlb` for the MLB Stats API (the match id is \
            the gamePk), `mlb:BASE` to point it elsewhere, `nhl[@BASE]` for the NHL api-web (ids `nhl:<game id>`), \
            or `espn:{sport}/{league}[@BASE]` for an ESPN \
            league (the match id is `espn:<event id>`; docs/feeds.md).

            On a phone (docs/phone.md): with --sink apns and --push-to-start-token, the activity starts on \
            the phone when the match goes live and a broadcast channel (iOS 18) created for the match \
            carries its updates and end; the channel is deleted when the match is over or on Ctrl-C (and \
            a channel left by a crashed run for the same match is deleted on the next). With \
            --update-token (an activity the app started itself) updates and end go to that token. \
            Ctrl-C ends the activity at once unless --leave-running. Refused tokens are explained on stderr.

            In a browser (docs/webpush.md): with --sink webpush, every push goes to the one subscription in \
            --webpush-subscription, signed with --vapid-key-file. If the push service says the subscription is \
            gone (404, 410), follow stops and exits 1.

            Examples:
              matchcast follow cricket-t20 --feed "fake?speed=600"
              matchcast follow tennis-bo3 --feed http://127.0.0.1:8090 --pretty
              matchcast follow mlb:744914 --feed mlb
              matchcast follow mlb:744914 --feed mlb --sink apns --push-to-start-token <hex> --apns-topic com.example.app \
                --apns-key-file AuthKey_ABC123DEFG.p8 --apns-key-id ABC123DEFG --apns-team-id DEF123GHIJ --apns-environment sandbox
              matchcast follow football --feed "fake?speed=60" --sink webpush --webpush-subscription subscription.json \
                --vapid-key-file vapid.pem --vapid-subject mailto:you@example.com
            """
    )

    @Argument(help: "The match id, as the feed names it.")
    var matchId: String

    @Option(help: "The feed: a base URL, fake[?speed=N&seed=S], mlb, mlb:BASE, nhl, nhl@BASE or espn:{sport}/{league}[@BASE] (default fake); given more than once, the match is polled from the one that serves it.")
    var feed: [String] = []

    @Option(help: "A provider of a failover group, as serve takes it (nhl;tier=official, espn:hockey/nhl;budget=10/min); more than once for several. Follow the game by its canonical id (game:…, from matchcast feeds search).")
    var provider: [String] = []

    @Flag(help: "One readable line per change instead of NDJSON (the same as --sink pretty).")
    var pretty = false

    @Option(help: "The app's bundle id; the APNs topic is <bundle id>.push-type.liveactivity.")
    var bundleId: String?

    @OptionGroup(title: "Sinks (the same for follow, replay and serve)")
    var sinkOptions: SinkOptions

    @Option(help: "A YAML configuration file; only its sink keys are read (sinks, bundleId, webhook.*, apns.*, webpush.*, fcm.*).")
    var config: String?

    @Option(help: "The phone's push-to-start token (hex), for --sink apns: the activity starts when the match goes live.")
    var pushToStartToken: String?

    @Option(help: "The update token (hex) of an activity the app started itself: updates and end go to it.")
    var updateToken: String?

    @Flag(help: "On Ctrl-C, leave the activity on the phone (and its channel), or the browser's notification, instead of ending it.")
    var leaveRunning = false

    @Option(help: "Where follow notes the broadcast channel of a match, to delete it after a crash.")
    var stateDir: String?

    @Option(help: "Send routine (priority 5) changes at most once per this many seconds.")
    var coalesce: Double = 0

    @Option(help: "Send at most this many key events an hour at priority 10, the rest at 5 (iOS's update budget).")
    var highPriorityPerHour = ActivityPolicy.defaultHighPriorityPerHour

    @Option(help: "Never poll more often than this many milliseconds (default 2000; 20 for the fake feed).")
    var minPollMs: Int?

    @Option(help: "Never wait longer than this many milliseconds between polls.")
    var maxPollMs: Int = 300_000

    @Option(help: "Seed for activity and delivery ids (same seed, same ids).")
    var seed: UInt64 = 1

    func validate() throws {
        guard !matchId.isEmpty, matchId.utf8.count <= 128 else {
            throw ValidationError("the match id must be 1 to 128 bytes")
        }
        guard coalesce >= 0, coalesce.isFinite else { throw ValidationError("--coalesce must be ≥ 0") }
        guard (0...3600).contains(highPriorityPerHour) else { throw ValidationError("--high-priority-per-hour must be 0...3600") }
        if let minPollMs, minPollMs < 1 { throw ValidationError("--min-poll-ms must be ≥ 1") }
        guard maxPollMs >= 1 else { throw ValidationError("--max-poll-ms must be ≥ 1") }
    }

    /// The phone's tokens, checked before anything starts: one line naming the flag, exit code 2.
    private func phoneTarget(_ configuration: BrokerConfiguration) throws -> (pushToStart: String?, update: String?)? {
        func fail(_ message: String) throws -> Never {
            StandardStreams.err("matchcast follow: \(message)")
            throw ExitCode(2)
        }
        for (flag, value) in [("--push-to-start-token", pushToStartToken), ("--update-token", updateToken)] {
            if let value, let problem = TokenArgument.problem(value, flag: flag) { try fail(problem) }
        }
        let hasPhone = pushToStartToken != nil || updateToken != nil
        guard configuration.sinks.contains("apns") else {
            if hasPhone { try fail("--push-to-start-token and --update-token need --sink apns") }
            return nil
        }
        guard hasPhone else {
            try fail("--sink apns needs the phone's --push-to-start-token (or --update-token of an activity the app started)")
        }
        if pushToStartToken != nil, updateToken != nil {
            try fail("--update-token: give it or --push-to-start-token, not both (an activity the app started needs no start)")
        }
        return (pushToStartToken?.lowercased(), updateToken?.lowercased())
    }

    /// The sinks' configuration: defaults < --config < environment < flags (`--pretty` is `--sink pretty`).
    func sinkConfiguration(environment: [String: String] = ProcessInfo.processInfo.environment) throws(ConfigurationError) -> BrokerConfiguration {
        var extra: [String: String] = [:]
        extra["bundleId"] = bundleId
        if pretty { extra["sinks"] = (sinkOptions.sink + ["pretty"]).joined(separator: ",") }
        return try sinkOptions.configuration(configFile: config, extra: extra, environment: environment)
    }

    func run() async throws {
        let specs: [FeedSpec]
        let providers: [ProviderEntry]
        do {
            providers = try ProviderEntry.list(parsing: provider.joined(separator: ","))
            specs = feed.isEmpty && !providers.isEmpty ? [] : try FeedSpec.list(parsing: feed.isEmpty ? "fake" : feed.joined(separator: ","))
        } catch {
            throw ValidationError(error.description)
        }
        let configuration = try ReplayCommand.exitOnBadConfiguration("follow") { () throws(ConfigurationError) in
            try sinkConfiguration()
        }
        let phone = try phoneTarget(configuration)
        let needsClient = specs.contains(where: \.needsHTTPClient) || providers.contains(where: \.spec.needsHTTPClient)
            || SinkFactory.needsHTTPClient(configuration.sinks)
        let client = needsClient ? HTTPClient(eventLoopGroupProvider: .singleton) : nil
        do {
            try await follow(specs: specs, providers: providers, client: client, configuration: configuration, phone: phone)
        } catch {
            try? await client?.shutdown()
            throw error
        }
        try await client?.shutdown()
    }

    private func follow(
        specs: [FeedSpec], providers: [ProviderEntry], client: HTTPClient?, configuration: BrokerConfiguration,
        phone: (pushToStart: String?, update: String?)?
    ) async throws {
        let clock = ContinuousClock()
        let transport: FeedRouter
        do {
            transport = try FeedRouter(specs: specs, providers: providers, failover: FailoverSettings(), client: client, clock: clock)
        } catch {
            throw ValidationError(error.description)
        }
        let isFake = providers.isEmpty && specs.allSatisfy { if case .fake = $0 { true } else { false } }
        let minPoll = Duration.milliseconds(minPollMs ?? (isFake ? 20 : 2000))
        let timing = PollTimingPolicy(
            defaultInterval: max(minPoll, .seconds(isFake ? 0 : 10)),
            minInterval: minPoll,
            maxInterval: .milliseconds(maxPollMs),
            backoffBase: isFake ? minPoll : .seconds(2),
            backoffCap: .seconds(60))
        var logger = Logger(label: "matchcast.follow")
        logger.logLevel = .warning
        let deadTokens = DeadTokenInbox()
        let sinks: [any DeliverySink]
        do {
            sinks = try SinkFactory(configuration: configuration, client: client, logger: logger).makeSinks(
                deadLetters: { ExplainingDeadLetters(sink: $0, configuration: configuration, command: "follow") },
                onInvalidToken: { token, reason in
                    await deadTokens.report(token, reason)
                    if reason.hasPrefix("fcm:") {
                        StandardStreams.err("matchcast follow: FCM calls the registration token \(Redact.token(token)) dead "
                            + "(\(reason.dropFirst(4))): the app was uninstalled or its token changed; give the app's current one")
                        return
                    }
                    let status = reason == "Unregistered" || reason == "ExpiredToken" ? 410 : 400
                    StandardStreams.err("matchcast follow: APNs refused token \(Redact.token(token)): "
                        + APNsRefusal.explain(status: status, reason: reason, configuration: configuration))
                })
        } catch {
            StandardStreams.err("matchcast follow: \(SinkOptions.message(error))")
            throw ExitCode(2)
        }
        defer { SinkFactory.shutdown(sinks) }
        let sink: any DeliverySink = sinks.count == 1 ? sinks[0] : FanOutSink(sinks: sinks)
        // A browser subscription that is gone can take nothing more: follow stops.
        let webPush = sinks.lazy.compactMap { $0 as? WebPushSink }.first
        // The phone's route: its update token, or a broadcast channel made for this match (found again after a crash).
        var channels: FollowChannels?
        let route: FollowSession.UpdateRoute
        if let update = phone?.update {
            route = .updateToken(update)
        } else if phone != nil {
            let made: FollowChannels
            do {
                made = try await FollowChannels.open(
                    sinks: sinks, configuration: configuration, client: client, matchId: matchId, stateDir: stateDir, logger: logger)
            } catch {
                StandardStreams.err("matchcast follow: \(error)")
                throw ExitCode(1)
            }
            channels = made
            route = .channel(made.channelId)
        } else {
            route = .synthetic
        }
        let session = FollowSession(
            matchId: matchId, sink: sink,
            policy: ActivityPolicy(coalesceInterval: .milliseconds(Int64(coalesce * 1000)), highPriorityPerHour: highPriorityPerHour),
            bundleId: configuration.topicBundleId, seed: seed, pushToStartToken: phone?.pushToStart, route: route,
            report: { StandardStreams.err("matchcast follow: " + $0) })
        let source = MatchSource(matchId: matchId, transport: transport, clock: clock, policy: timing)
        let poller = Poller(source: source, clock: clock) { result in
            do {
                for report in deadTokens.take() { try await session.tokenRejected(report.token) }
                try await session.handle(result)
            } catch {
                StandardStreams.err("matchcast follow: cannot deliver: \(error)")
            }
        }
        // The poller returning (the match is final), or the activity ending early (a dead token), ends the
        // whole group cleanly.
        let run: @Sendable () async -> Void = {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await poller.run() }
                group.addTask {
                    while !Task.isCancelled, !deadTokens.hasPending, webPush?.subscriptionGone == nil {
                        if await session.isDone { break }
                        try? await Task.sleep(for: .milliseconds(50))
                    }
                }
                await group.next()
                group.cancelAll()
            }
        }
        let group = ServiceGroup(configuration: ServiceGroupConfiguration(
            services: [.init(service: PollerService(run: run), successTerminationBehavior: .gracefullyShutdownGroup)],
            gracefulShutdownSignals: [.sigterm, .sigint],
            logger: logger))
        try await group.run()
        for report in deadTokens.take() { _ = try? await session.tokenRejected(report.token) }
        var failed = deadTokens.deadCount > 0
        // A browser, as a phone, has its notification taken down on Ctrl-C (an `end`), unless --leave-running.
        let endsOnStop = (phone != nil || webPush != nil) && !leaveRunning
        let what = phone != nil ? "the activity" : "the browser's notification"
        if webPush?.subscriptionGone == nil, await !session.isDone {
            if endsOnStop {
                do {
                    try await session.stop()
                    StandardStreams.err("matchcast follow: stopped before the match ended; \(what) was ended")
                } catch {
                    StandardStreams.err("matchcast follow: stopped; could not end \(what): \(error)")
                    failed = true
                }
            } else {
                StandardStreams.err("matchcast follow: stopped before the match ended"
                    + (phone != nil || webPush != nil ? "; \(what) was left running (--leave-running)" : ""))
            }
        }
        let leftRunning = await !session.isDone
        if let channels, !leftRunning {
            do {
                try await channels.close()
            } catch {
                StandardStreams.err("matchcast follow: \(error); it is deleted on the next run for this match")
                failed = true
            }
        }
        // What the sinks still hold leaves before follow exits (the Web Push sink sends behind `deliver`).
        for each in sinks {
            do {
                try await each.flush()
            } catch is WebPushSubscriptionGone {
                // Said below.
            } catch {
                StandardStreams.err("matchcast follow: \(each.name): \(error)")
                failed = true
            }
        }
        if let gone = webPush?.subscriptionGone {
            StandardStreams.err("matchcast follow: \(gone)")
            failed = true
        }
        if failed { throw ExitCode(1) }
    }
}

/// Runs a polling loop as a `Service` that stops on graceful shutdown (SIGINT, SIGTERM).
struct PollerService: Service {
    let run: @Sendable () async -> Void

    func run() async throws {
        await cancelWhenGracefulShutdown { await run() }
    }
}
