import Foundation
import Hummingbird
import HummingbirdTesting
import Logging
import MatchcastCore
import MatchcastHTTP
import MatchcastService
import MatchcastStore
import MatchcastTesting
import Prometheus

/// The API over an in-memory store, driven at router level, with its own metrics registry so
/// tests never share `MetricsSystem`.
struct HTTPHarness: Sendable {
    static let adminKey = "admin-key-for-tests"
    /// A well-formed APNs token (32 bytes of hex).
    static let tokenA = String(repeating: "ab", count: 32)
    static let tokenB = String(repeating: "cd", count: 32)

    let store: InMemoryStore
    let service: LiveActivityService
    let registry: PrometheusCollectorRegistry
    let configuration: APIConfiguration

    /// - Parameters:
    ///   - otherApps: apps served beside the default one (docs/apps.md).
    ///   - appAdminKeys: admin keys scoped to one app each, by app id.
    init(
        adminKey: String? = nil, maxBodyBytes: Int = 16 * 1024, feedReachable: Bool = true, sinksHealthy: Bool = true,
        otherApps: [AppCatalog.App] = [], appAdminKeys: [String: String] = [:]
    ) {
        let store = InMemoryStore()
        let logger = Logger(label: "test.http")
        let now: @Sendable () -> Date = { Date(timeIntervalSince1970: 1_800_000_000) }
        let metrics = BrokerMetrics()
        let lifecycle = LifecycleManager(
            store: store,
            dispatcher: DeliveryDispatcher(sinks: [CapturingSink()], metrics: metrics, logger: logger),
            settings: BrokerSettings(seed: 7, otherApps: otherApps), metrics: metrics, now: now, logger: logger)
        self.store = store
        self.service = LiveActivityService(
            store: store, lifecycle: lifecycle, feeds: { ["feed": feedReachable] }, sinksHealthy: { sinksHealthy },
            apps: BrokerSettings(otherApps: otherApps).apps, now: now, logger: logger)
        self.registry = PrometheusCollectorRegistry()
        self.configuration = APIConfiguration(
            host: "127.0.0.1", port: 0, adminKey: adminKey, maxBodyBytes: maxBodyBytes, appAdminKeys: appAdminKeys)
    }

    /// Runs `test` against the application `buildApplication` makes, at router level.
    func run<Value: Sendable>(_ test: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        let app = buildApplication(service: service, configuration: configuration, registry: registry,
                                   logger: Logger(label: "test.http"))
        return try await app.test(.router, test)
    }

    /// A match the broker has seen, so `/v1/matches` has something to list.
    func seedMatch(id: String = "epl-mun-liv") async throws {
        let json = """
            {"id": "\(id)", "sport": "football", "status": "live", "updatedAt": "2026-04-21T15:12:09Z",
             "home": {"id": "mun", "name": "Manchester United", "short": "MUN"},
             "away": {"id": "liv", "name": "Liverpool", "short": "LIV"},
             "score": {"home": 2, "away": 1, "period": "2H", "clock": "67'"}}
            """
        let snapshot = try JSON.decode(MatchSnapshot.self, from: Data(json.utf8))
        try await store.saveMatch(MatchRecord(snapshot: snapshot, updatedAt: Date(timeIntervalSince1970: 1_800_000_000)))
    }
}

extension TestClientProtocol {
    /// One request; `bearer` becomes `Authorization: Bearer …`, `json` the body.
    func call(_ method: HTTPRequest.Method, _ uri: String, bearer: String? = nil, json: String? = nil,
              headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers = extra
        if let bearer { headers[.authorization] = "Bearer \(bearer)" }
        if json != nil { headers[.contentType] = "application/json" }
        return try await execute(uri: uri, method: method, headers: headers, body: json.map { ByteBuffer(string: $0) })
    }

    /// Registers a device and returns its id and secret.
    func register() async throws -> DeviceRegistration {
        let response = try await call(.post, "/v1/devices")
        guard response.status == .created else { throw HarnessError("register answered \(response.status)") }
        return try response.decode(DeviceRegistration.self)
    }
}

struct HarnessError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// The API's error body.
struct ErrorBody: Decodable {
    struct Detail: Decodable {
        var code: String
        var message: String
    }

    var error: Detail
}

extension TestResponse {
    var text: String { String(buffer: body) }

    func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try JSON.decoder().decode(type, from: Data(text.utf8))
    }

    /// The error body, or nil when the body is not the API's error shape.
    var apiError: ErrorBody.Detail? { (try? decode(ErrorBody.self))?.error }

    var isJSON: Bool { headers[.contentType] == "application/json" }
}
