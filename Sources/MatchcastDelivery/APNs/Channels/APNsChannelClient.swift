import CoreMetrics
import Foundation
import Logging
import NIOCore
import NIOPosix

/// Apple's channel management API for broadcast push (iOS 18): create, delete and list the app's
/// channels on `api-manage-broadcast[.sandbox].push.apple.com` (ports 2196 and 2195).
///
/// - create: `POST /1/apps/<bundle id>/channels` with `{"message-storage-policy": 0|1, "push-type":
///   "LiveActivity"}`, answered 201 with the new id in the `apns-channel-id` header;
/// - delete: `DELETE /1/apps/<bundle id>/channels` with `apns-channel-id`, answered 204 (200 taken too);
///   a channel that no longer exists (404) counts as deleted;
/// - list: `GET /1/apps/<bundle id>/all-channels`, answered 200 with `{"channels": [...]}`.
///
/// Every request carries the APNs sink's provider token (one `APNsTokenSigner`, so the two never
/// replace each other's token) and a fresh `apns-request-id`, and goes over the sink's HTTP/2
/// connection code (`APNsConnectionPool`), with its own small pool to the management host. Each
/// request has the sink's deadlines: connection set-up within `connectTimeout`, the answer within
/// `requestTimeout`. One retry, with a new provider token, after 403 `ExpiredProviderToken`; any
/// other failure is thrown (`APNsChannelError`) for the caller to retry on its own schedule.
public struct APNsChannelClient: Sendable {
    /// What APNs keeps for a device that is offline when a broadcast goes out.
    public enum StoragePolicy: Int, Sendable, Hashable {
        /// Nothing (a higher publishing budget; `apns-expiration` must be 0).
        case noStorage = 0
        /// The most recent broadcast, for up to 8 hours.
        case mostRecent = 1
    }

    /// Apple's management endpoint for an environment.
    public static func defaultEndpoint(for environment: APNsSinkConfiguration.Environment) -> String {
        switch environment {
        case .production: "https://api-manage-broadcast.push.apple.com:2196"
        case .sandbox: "https://api-manage-broadcast.sandbox.push.apple.com:2195"
        }
    }

    /// The base URL requests go to, without a trailing slash.
    public let endpoint: String
    /// The app whose channels these are.
    public let bundleId: String
    let pool: APNsConnectionPool
    let signer: APNsTokenSigner
    let logger: Logger

    /// A client sharing `sink`'s signing key, provider token, trust roots and deadlines.
    /// - Parameters:
    ///   - endpoint: `https://host:port`; by default Apple's management host for the sink's
    ///     environment, or, when the sink was pointed at a test server, that same server.
    ///   - eventLoopGroup: where the connection runs; NIO's shared group by default.
    /// - Throws: `APNsChannelError` (`config`) for a bad endpoint or bundle id.
    public init(
        sink: APNsSink, bundleId: String, endpoint: String? = nil,
        eventLoopGroup: (any EventLoopGroup)? = nil,
        metricsFactory: any MetricsFactory = MetricsSystem.factory,
        logger: Logger = Logger(label: "matchcast.apns.channels")
    ) throws(APNsChannelError) {
        let configuration = sink.configuration
        let chosen = endpoint ?? configuration.endpoint ?? Self.defaultEndpoint(for: configuration.environment)
        var base = chosen.trimmingCharacters(in: .whitespaces)
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base), url.scheme?.lowercased() == "https", url.host?.isEmpty == false,
              url.path.isEmpty, url.query == nil
        else { throw .config("channels endpoint must be an https URL without a path (https://host:port)") }
        guard !bundleId.isEmpty, bundleId.utf8.count <= 255,
              bundleId.unicodeScalars.allSatisfy({ CharacterSet.alphanumerics.contains($0) || $0 == "." || $0 == "-" })
        else { throw .config("bundle id '\(bundleId.prefix(80))' is not a bundle identifier") }
        self.endpoint = base
        self.bundleId = bundleId
        signer = sink.signer
        var logger = logger
        logger[metadataKey: "apns.channels.endpoint"] = "\(base)"
        self.logger = logger
        do {
            let tls = try configuration.tlsConfiguration()
            pool = try APNsConnectionPool(
                settings: APNsConnectionPool.Settings(
                    url: url, tls: tls, maxConnections: 1, maxStreamsPerConnection: 16,
                    connectTimeout: configuration.connectTimeout, requestTimeout: configuration.requestTimeout)!,  // the host was checked above
                group: eventLoopGroup ?? MultiThreadedEventLoopGroup.singleton, metrics: APNsMetrics(factory: metricsFactory), logger: logger)
        } catch {
            throw .config("TLS configuration: \(error)")
        }
    }

    /// Closes the connection; later requests fail at once.
    public func shutdown() {
        pool.shutdown()
    }

    /// False after the connection could not be set up or stopped answering, until it works again.
    public var isHealthy: Bool { pool.statistics.healthy }

    /// Creates a Live Activity channel and returns its id (base64, as APNs gives it).
    public func create(storagePolicy: StoragePolicy = .mostRecent) async throws(APNsChannelError) -> String {
        let body = #"{"message-storage-policy":\#(storagePolicy.rawValue),"push-type":"LiveActivity"}"#
        let response = try await exchange("create", method: "POST", path: channelsPath, extra: [("content-type", "application/json")], body: body)
        guard response.status == 201 || response.status == 200 else { throw rejected("create", response) }
        guard let id = response.headers.first(name: "apns-channel-id"), !id.isEmpty, id.utf8.count <= 1024 else {
            throw APNsChannelError(code: .badAnswer("HTTP \(response.status) without an apns-channel-id header"), operation: "create")
        }
        logger.info("APNs channel created", metadata: ["apns.channel": "\(id)"])
        return id
    }

    /// Deletes a channel. Returns false when APNs no longer knew it (404): deleted either way.
    @discardableResult
    public func delete(channelId: String) async throws(APNsChannelError) -> Bool {
        let response = try await exchange("delete", method: "DELETE", path: channelsPath, extra: [("apns-channel-id", channelId)], body: nil)
        switch response.status {
        case 200, 204:
            logger.info("APNs channel deleted", metadata: ["apns.channel": "\(channelId)"])
            return true
        case 404:
            logger.notice("APNs channel was already gone", metadata: ["apns.channel": "\(channelId)"])
            return false
        default:
            throw rejected("delete", response)
        }
    }

    /// Every channel of the app in this environment.
    public func list() async throws(APNsChannelError) -> [String] {
        struct Listing: Decodable { var channels: [String] }
        let response = try await exchange("list", method: "GET", path: "/1/apps/\(bundleId)/all-channels", extra: [], body: nil)
        guard response.status == 200 else { throw rejected("list", response) }
        guard let listing = try? JSONDecoder().decode(Listing.self, from: Data(response.body)) else {
            throw APNsChannelError(code: .badAnswer("the body is not {\"channels\": [...]}"), operation: "list")
        }
        return listing.channels
    }

    // MARK: Internals

    private var channelsPath: String { "/1/apps/\(bundleId)/channels" }

    /// One request and its answer; one more try with a new provider token after `ExpiredProviderToken`.
    private func exchange(
        _ operation: String, method: String, path: String, extra: [(name: String, value: String)], body: String?
    ) async throws(APNsChannelError) -> APNsResponse {
        var refreshed = false
        while true {
            let token: APNsProviderToken
            do {
                token = try signer.currentToken()
            } catch {
                throw APNsChannelError(code: .signing("\(error)"), operation: operation)
            }
            let head = APNsRequestHead(
                method: method,
                fields: [("authorization", "bearer " + token.jwt), ("apns-request-id", UUID().uuidString.lowercased())] + extra)
            let request = APNsRequest(
                head: head, path: path, apnsID: nil, body: body.map { ByteBuffer(string: $0) } ?? ByteBuffer())
            let exchanges = await pool.send([request])
            switch exchanges.first {
            case .answered(let response)?:
                let reason = APNsAnswer.reason(fromBody: response.body)
                if response.status == 403, reason == "ExpiredProviderToken", !refreshed,
                   let fresh = try? signer.refresh(rejecting: token), fresh != token {
                    refreshed = true
                    continue
                }
                return response
            case .failed(let error)?:
                throw APNsChannelError(code: .transport(timeout: error.isTimeout, message: error.description), operation: operation)
            case nil:
                throw APNsChannelError(code: .transport(timeout: false, message: "no answer"), operation: operation)
            }
        }
    }

    private func rejected(_ operation: String, _ response: APNsResponse) -> APNsChannelError {
        APNsChannelError(code: .rejected(status: response.status, reason: APNsAnswer.reason(fromBody: response.body)), operation: operation)
    }
}
