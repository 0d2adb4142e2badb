import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery
import MatchcastService
import MatchcastStore
import Metrics

/// Builds the delivery sinks `sinks` names (`stdout`, `pretty`, `webhook`, `webhook:URL`, `apns`, `webpush`), in
/// that order, for `serve`, `follow` and `replay` alike (the one place sinks are made from options). Whatever a sink reads at start (webhook secret, APNs key and CA files, the Web Push subscription and VAPID key) is read here,
/// before anything is served, so a bad file is a configuration error and not a failed first push.
struct SinkFactory {
    var configuration: BrokerConfiguration
    /// The process's shared client; needed when `needsHTTPClient`.
    let client: HTTPClient?
    let logger: Logger
    /// Batches the stdout sink may leave unwritten when it returns (`StdoutSink(writeBehind:)`): 0, written before
    /// `deliver` returns, for `serve` and `follow`, whose outboxes must not let go of a delivery before it is written;
    /// `replay` sets it, since its deliveries live only in its own memory.
    var stdoutWriteBehind = 0
    /// Whether the FCM sink sends each delivery to the token it carries (`serve`: Android devices register theirs
    /// through the API) rather than to the `fcm` section's one token (`follow`, `replay`).
    var routesByTarget = false
    /// Where the push-service sinks count; an app's are labelled with its id (`AppMetricsFactory`).
    var metricsFactory: any MetricsFactory = MetricsSystem.factory

    /// Whether any of `sinks` sends over HTTP (and so needs the shared `HTTPClient`).
    static func needsHTTPClient(_ sinks: [String]) -> Bool {
        sinks.contains { $0 == "apns" || $0 == "fcm" || $0 == "webpush" || SinkNames.isWebhook($0) }
    }

    /// Closes what the sinks hold open (the APNs sink's connections, the Web Push sink's sends); call after the
    /// last delivery (and, for the Web Push sink, after `flush()`).
    static func shutdown(_ sinks: [any DeliverySink]) {
        let sinks = sinks.flatMap { ($0 as? AppRoutedSink)?.sinks ?? [$0] }
        for case let apns as APNsSink in sinks { apns.shutdown() }
        for case let webPush as WebPushSink in sinks { webPush.shutdown() }
    }

    /// - Parameters:
    ///   - deadLetters: where a sink (by name: `webhook`, `apns`, `webpush`) keeps what it cannot deliver.
    ///   - deadTokens: told of every token APNs calls dead; it ends or forgets the token.
    /// - Throws: `ConfigurationError` naming the key at fault; never quoting a key or secret.
    func makeSinks(
        deadLetters: (_ sink: String) -> any DeadLetterRecorder, deadTokens: DeadTokenRelay
    ) throws(ConfigurationError) -> [any DeliverySink] {
        try makeSinks(deadLetters: deadLetters, onInvalidToken: deadTokens.report)
    }

    /// The same, telling `onInvalidToken` of every dead token (`follow` and `replay` apply them themselves).
    func makeSinks(
        deadLetters: (_ sink: String) -> any DeadLetterRecorder,
        onInvalidToken: @escaping @Sendable (_ token: String, _ reason: String) async -> Void
    ) throws(ConfigurationError) -> [any DeliverySink] {
        var sinks: [any DeliverySink] = []
        for spec in configuration.sinks {
            // With several apps, a push service's sink is one per app, each delivery to its own app's (docs/apps.md).
            if !configuration.apps.isEmpty, ["apns", "fcm", "webpush"].contains(spec) {
                sinks.append(try appRoutedSink(spec, deadLetters: deadLetters, onInvalidToken: onInvalidToken))
                continue
            }
            if spec == "stdout" {
                sinks.append(StdoutSink(writeBehind: stdoutWriteBehind))
            } else if spec == "pretty" {
                sinks.append(PrettySink())
            } else if spec == "webhook" {
                sinks.append(try webhookSink(url: configuration.webhookURL.trimmed, deadLetters: deadLetters("webhook")))
            } else if spec == "apns" {
                sinks.append(try apnsSink(deadLetters: deadLetters("apns"), onInvalidToken: onInvalidToken))
            } else if spec == "fcm" {
                sinks.append(try fcmSink(deadLetters: deadLetters("fcm"), onInvalidToken: onInvalidToken))
            } else if spec == "webpush" {
                sinks.append(try webPushSink(deadLetters: deadLetters("webpush"), onInvalidToken: onInvalidToken))
            } else if spec.hasPrefix("webhook:") {
                sinks.append(try webhookSink(url: String(spec.dropFirst("webhook:".count)), deadLetters: deadLetters("webhook")))
            } else {
                throw ConfigurationError(key: "sinks", reason: "'\(spec.prefix(80))' is not \(SinkNames.choices)")
            }
        }
        return sinks
    }

    /// The push service `spec`'s sink for every app: the default app's (the top level), then each of `apps`, each with
    /// its own credentials and its metrics labelled with its id.
    private func appRoutedSink(
        _ spec: String, deadLetters: (_ sink: String) -> any DeadLetterRecorder,
        onInvalidToken: @escaping @Sendable (_ token: String, _ reason: String) async -> Void
    ) throws(ConfigurationError) -> AppRoutedSink {
        let apps = [(AppCatalog.defaultId, configuration)] + configuration.apps.map { ($0.id, $0.settings) }
        var routes: [AppRoutedSink.Route] = []
        for (appId, settings) in apps {
            var factory = self
            factory.configuration = settings
            factory.configuration.sinks = [spec]
            factory.configuration.apps = []
            factory.metricsFactory = AppMetricsFactory(base: metricsFactory, appId: appId)
            let sink: any DeliverySink
            do {
                guard let made = try factory.makeSinks(deadLetters: deadLetters, onInvalidToken: onInvalidToken).first else { continue }
                sink = made
            } catch {
                throw ConfigurationError(key: appId == AppCatalog.defaultId ? error.key : "apps.\(appId).\(error.key)", reason: error.reason)
            }
            routes.append(AppRoutedSink.Route(
                appId: appId, topic: APNsHeaders.topic(bundleId: settings.topicBundleId), sink: sink))
        }
        return AppRoutedSink(name: spec, routes: routes, deadLetters: deadLetters(spec), metricsFactory: metricsFactory)
    }

    /// The APNs sink's settings from the `apns` section (the signing key is read by the sink).
    func apnsConfiguration() -> APNsSinkConfiguration {
        let apns = configuration.apns
        return APNsSinkConfiguration(
            key: .file(apns.keyFile), keyId: apns.keyId.trimmed, teamId: apns.teamId.trimmed,
            environment: apns.environment,
            endpoint: apns.endpoint.isEmpty ? nil : apns.endpoint,
            trustRoots: apns.caFile.isEmpty ? .system : .file(apns.caFile),
            maxConcurrentRequests: apns.maxConcurrentRequests, maxConnections: apns.maxConnections)
    }

    private func apnsSink(
        deadLetters: any DeadLetterRecorder, onInvalidToken: @escaping @Sendable (_ token: String, _ reason: String) async -> Void
    ) throws(ConfigurationError) -> APNsSink {
        let client = try sharedClient(for: "apns")
        do {
            return try APNsSink(
                configuration: apnsConfiguration(), client: client, deadLetters: deadLetters,
                onInvalidToken: onInvalidToken, metricsFactory: metricsFactory, logger: logger)
        } catch {
            // APNsError's messages name files and ids, never key material.
            let key = switch error.reason {
            case "key": "apns.keyFile"
            case "config" where "\(error)".contains("CA file"): "apns.caFile"
            default: "apns"
            }
            throw ConfigurationError(key: key, reason: "\(error)")
        }
    }

    /// The channel management client for broadcast channel mode (`broadcast.minFollowers` > 0, or
    /// `always` for `follow`), sharing the APNs sink's key and provider token; nil when the mode is off.
    func channelClient(for sinks: [any DeliverySink], always: Bool = false) throws(ConfigurationError) -> APNsChannelClient? {
        guard always || configuration.broadcastMinFollowers > 0 else { return nil }
        guard let apns = sinks.lazy.compactMap({ $0 as? APNsSink }).first else {
            throw ConfigurationError(key: "broadcast.minFollowers", reason: "broadcast channels need the apns sink (--sink apns)")
        }
        let endpoint = configuration.apns.channelsEndpoint.trimmed
        do {
            return try APNsChannelClient(
                sink: apns, bundleId: configuration.topicBundleId, endpoint: endpoint.isEmpty ? nil : endpoint,
                eventLoopGroup: client?.eventLoopGroup,
                logger: logger)
        } catch {
            throw ConfigurationError(key: error.reason == "config" && "\(error)".contains("endpoint") ? "apns.channelsEndpoint" : "bundleId",
                                     reason: "\(error)")
        }
    }

    /// Broadcast channel mode for `serve`, when `broadcast.minFollowers` > 0: run it with the broker's
    /// services, after `Broker.useBroadcastChannels`. Its store must keep channels (SQLite, memory, PostgreSQL).
    func broadcastChannels(
        sinks: [any DeliverySink], store: any MatchcastStore, settings: BrokerSettings, clock: any Clock<Duration>
    ) throws(ConfigurationError) -> BroadcastChannels? {
        guard let client = try channelClient(for: sinks) else { return nil }
        guard let channelStore = store as? any MatchcastStore & ChannelStore else {
            client.shutdown()
            throw ConfigurationError(key: "store", reason: "this store keeps no broadcast channels (broadcast.minFollowers)")
        }
        return BroadcastChannels(
            client: client, store: channelStore, settings: settings,
            policy: ChannelPolicy(minFollowers: configuration.broadcastMinFollowers), clock: clock, now: { Date() },
            logger: logger)
    }

    private func webhookSink(url: String, deadLetters: any DeadLetterRecorder) throws(ConfigurationError) -> WebhookSink {
        let client = try sharedClient(for: "webhook")
        let secret: WebhookSecret
        do {
            secret = try WebhookSecret(configuration.webhookSecret)
        } catch {
            throw ConfigurationError(key: "webhook.secret", reason: "\(error)")
        }
        do {
            return try WebhookSink(
                configuration: WebhookSinkConfiguration(url: url, secret: secret, maxBatch: configuration.webhookBatchSize),
                client: client, deadLetters: deadLetters, logger: logger)
        } catch {
            throw ConfigurationError(key: "sinks", reason: "webhook:\(url.prefix(80)): \(error)")
        }
    }

    /// The Web Push sink: to the one subscription of the `webpush` section, or (`routesByTarget`) to each delivery's
    /// own, returning from a delivery only once it is settled (the broker's outbox lets go of it then). Its files are
    /// read and checked here. Routed, a subscription the push service calls gone reaches `onInvalidToken` as the
    /// device's stored address (`DirectAddress.stored`), with a reason prefixed `webpush:`.
    private func webPushSink(
        deadLetters: any DeadLetterRecorder, onInvalidToken: @escaping @Sendable (_ token: String, _ reason: String) async -> Void
    ) throws(ConfigurationError) -> WebPushSink {
        let client = try sharedClient(for: "webpush")
        let settings = configuration.webPush
        do {
            let vapid = try VAPIDCredentials.load(keyFile: settings.vapidKeyFile.trimmed, subject: settings.vapidSubject)
            var sinkConfiguration = routesByTarget
                ? WebPushSinkConfiguration(
                    recipient: .deliveryTargets, vapid: vapid, waitsForSends: true,
                    maxConcurrentRequests: WebPushSinkConfiguration.routedConcurrency)
                : WebPushSinkConfiguration(
                    recipient: .subscription(try WebPushMessage.Subscription.load(file: settings.subscriptionFile.trimmed)), vapid: vapid)
            sinkConfiguration.deepLink = deepLink
            return try WebPushSink(
                configuration: sinkConfiguration, client: client, deadLetters: deadLetters,
                metricsFactory: metricsFactory,
                onGone: { subscription, reason in await onInvalidToken(DirectAddress.webPush(subscription).stored, reason) },
                logger: logger)
        } catch {
            // The messages name files and origins, never keys or the endpoint's path.
            let key = switch error.part {
            case .subscription: "webpush.subscriptionFile"
            case .vapidKey: "webpush.vapidKeyFile"
            case .vapidSubject: "webpush.vapidSubject"
            case .limits: "webpush"
            }
            throw ConfigurationError(key: key, reason: error.message)
        }
    }

    /// The FCM sink: to the one device of the `fcm` section, or (`routesByTarget`) to each delivery's own FCM token.
    /// Its service account file is read and checked here. A token FCM calls dead reaches `onInvalidToken` with its
    /// reason prefixed `fcm:`, apart from APNs' reasons; routed by target, the token comes as the device's stored
    /// address (`DirectAddress.stored`), which is how the broker finds the device.
    private func fcmSink(
        deadLetters: any DeadLetterRecorder, onInvalidToken: @escaping @Sendable (_ token: String, _ reason: String) async -> Void
    ) throws(ConfigurationError) -> FCMSink {
        let client = try sharedClient(for: "fcm")
        let settings = configuration.fcm
        let routed = routesByTarget
        do {
            var sinkConfiguration = FCMSinkConfiguration(
                serviceAccount: .file(settings.serviceAccountFile.trimmed),
                recipient: routed ? .deliveryTargets : .registrationToken(settings.registrationToken.trimmed),
                endpoint: settings.endpoint.trimmed)
            sinkConfiguration.deepLink = deepLink
            return try FCMSink(
                configuration: sinkConfiguration,
                client: client, deadLetters: deadLetters,
                onInvalidToken: { token, reason in
                    await onInvalidToken(routed ? DirectAddress.fcm(token).stored : token, "fcm:" + reason)
                },
                metricsFactory: metricsFactory, logger: logger)
        } catch {
            // FCMError's messages name the file and the field, never the key.
            let key = switch error.reason {
            case "service_account": "fcm.serviceAccountFile"
            default: "fcm"
            }
            throw ConfigurationError(key: key, reason: "\(error)")
        }
    }

    /// The `surface.deepLink` template, checked when the configuration was loaded.
    private var deepLink: DeepLinkTemplate? {
        configuration.deepLink.isEmpty ? nil : try? DeepLinkTemplate(configuration.deepLink)
    }

    private func sharedClient(for sink: String) throws(ConfigurationError) -> HTTPClient {
        guard let client else {
            throw ConfigurationError(key: "sinks", reason: "the \(sink) sink needs an HTTP client and none was made")
        }
        return client
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespaces) }
}
