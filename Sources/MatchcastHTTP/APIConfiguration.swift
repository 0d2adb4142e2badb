/// How `matchcast serve` exposes the device/admin API: where it listens, the admin key, the body limit.
///
/// `description` never shows the admin key, so the configuration can be logged as it is.
public struct APIConfiguration: Sendable, Hashable, CustomStringConvertible {
    public var host: String
    public var port: Int
    /// The bearer key of admin calls (`POST /v1/feedback`); `nil` turns admin calls off (403).
    public var adminKey: String?
    /// Largest request body accepted; a larger one is refused with 413 before it is decoded.
    public var maxBodyBytes: Int
    /// Admin keys scoped to one app each, by app id (docs/apps.md): such a key sees and changes only its app's
    /// devices, tokens and dead letters.
    public var appAdminKeys: [String: String]

    public init(
        host: String = "127.0.0.1", port: Int = 8080, adminKey: String? = nil, maxBodyBytes: Int = 16 * 1024,
        appAdminKeys: [String: String] = [:]
    ) {
        self.host = host
        self.port = port
        // An empty key would let an empty bearer in; treat it as "not configured".
        self.adminKey = adminKey.flatMap { $0.isEmpty ? nil : $0 }
        self.maxBodyBytes = maxBodyBytes
        self.appAdminKeys = appAdminKeys.filter { !$0.value.isEmpty }
    }

    public var description: String {
        "APIConfiguration(host: \(host), port: \(port), adminKey: \(adminKey == nil ? "none" : "<redacted>"), maxBodyBytes: \(maxBodyBytes), appAdminKeys: \(appAdminKeys.keys.sorted()) <redacted>)"
    }
}
