import Foundation
import NIOSSL

/// Where and how the APNs sink sends: credentials, endpoint, trust, limits.
///
/// `description` never shows key material: a PEM key or CA given inline appears as its length.
public struct APNsSinkConfiguration: Sendable, CustomStringConvertible {
    /// Which APNs: production devices, or development builds (sandbox).
    public enum Environment: String, Sendable, Hashable, CaseIterable {
        case production
        case sandbox

        /// Apple's endpoint for the environment.
        public var endpoint: String {
            switch self {
            case .production: "https://api.push.apple.com"
            case .sandbox: "https://api.sandbox.push.apple.com"
            }
        }
    }

    /// Where the `.p8` signing key comes from.
    public enum KeySource: Sendable, Hashable, CustomStringConvertible {
        /// A file holding the PEM key (`--apns-key-file`).
        case file(String)
        /// The PEM text itself (from a secret store, or tests).
        case pem(String)

        public var description: String {
            switch self {
            case .file(let path): "file(\(path))"
            case .pem(let text): "pem(\(text.utf8.count) bytes)"
            }
        }
    }

    /// The certificates APNs' server certificate must chain to.
    public enum TrustRoots: Sendable, Hashable, CustomStringConvertible {
        /// The system's trust roots.
        case system
        /// Only the PEM certificates in this file (`--apns-ca-file`).
        case file(String)
        /// Only these PEM certificates (tests).
        case pem(String)

        public var description: String {
            switch self {
            case .system: "system"
            case .file(let path): "file(\(path))"
            case .pem(let text): "pem(\(text.utf8.count) bytes)"
            }
        }
    }

    public var key: KeySource
    /// The 10-character key id of the signing key.
    public var keyId: String
    /// The 10-character team id.
    public var teamId: String
    public var environment: Environment
    /// Replaces the environment's endpoint (`--apns-endpoint`), e.g. a fake APNs in tests: an https URL
    /// without a path.
    public var endpoint: String?
    public var trustRoots: TrustRoots
    /// Requests in flight at once on one connection (one HTTP/2 stream each): the server's
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` (APNs: 1000), capped at this (100 × 4 connections by
    /// default).
    public var maxConcurrentRequests: Int
    /// HTTP/2 connections to APNs at most; one more is opened when every open one is full and
    /// requests wait.
    public var maxConnections: Int
    /// Setting up one connection (TCP, TLS, the server's first SETTINGS) must take no longer.
    public var connectTimeout: Duration
    /// From writing a request to its whole answer; an unanswered request fails after this.
    public var requestTimeout: Duration
    public var retry: RetryPolicy
    /// The provider token's age at replacement, 20 ... 60 minutes.
    public var tokenRefreshInterval: Duration

    public init(
        key: KeySource,
        keyId: String,
        teamId: String,
        environment: Environment = .production,
        endpoint: String? = nil,
        trustRoots: TrustRoots = .system,
        maxConcurrentRequests: Int = 100,
        requestTimeout: Duration = .seconds(10),
        retry: RetryPolicy = .apns,
        tokenRefreshInterval: Duration = .seconds(50 * 60),
        maxConnections: Int = 4,
        connectTimeout: Duration = .seconds(10)
    ) {
        self.key = key
        self.keyId = keyId
        self.teamId = teamId
        self.environment = environment
        self.endpoint = endpoint
        self.trustRoots = trustRoots
        self.maxConcurrentRequests = maxConcurrentRequests
        self.requestTimeout = requestTimeout
        self.retry = retry
        self.tokenRefreshInterval = tokenRefreshInterval
        self.maxConnections = maxConnections
        self.connectTimeout = connectTimeout
    }

    /// The base URL requests go to: the override, or the environment's endpoint.
    public var resolvedEndpoint: String { endpoint ?? environment.endpoint }

    public var description: String {
        "APNsSinkConfiguration(endpoint: \(resolvedEndpoint), keyId: \(keyId), teamId: \(teamId), key: \(key), "
            + "trustRoots: \(trustRoots), maxConcurrentRequests: \(maxConcurrentRequests), maxConnections: \(maxConnections), "
            + "requestTimeout: \(requestTimeout), connectTimeout: \(connectTimeout))"
    }

    /// Loads the signing key.
    public func credentials() throws(APNsError) -> APNsCredentials {
        switch key {
        case .file(let path): try APNsCredentials(keyFile: path, keyId: keyId, teamId: teamId)
        case .pem(let text): try APNsCredentials(keyPEM: text, keyId: keyId, teamId: teamId)
        }
    }

    /// Checks the values and returns the endpoint without a trailing slash.
    func validate() throws(APNsError) -> String {
        var base = resolvedEndpoint.trimmingCharacters(in: .whitespaces)
        while base.hasSuffix("/") { base.removeLast() }
        guard let url = URL(string: base), url.scheme?.lowercased() == "https" else {
            throw .invalidConfiguration("endpoint must be an https URL (APNs speaks HTTP/2 over TLS only)")
        }
        guard let host = url.host, !host.isEmpty else { throw .invalidConfiguration("endpoint has no host") }
        guard url.path.isEmpty, url.query == nil else {
            throw .invalidConfiguration("endpoint must not have a path or query; /3/device/<token> is added")
        }
        guard maxConcurrentRequests > 0, requestTimeout > .zero, maxConnections > 0, connectTimeout > .zero else {
            throw .invalidConfiguration("maxConcurrentRequests, maxConnections, requestTimeout and connectTimeout must be positive")
        }
        guard retry.maxAttempts > 0, retry.totalDeadline > .zero, retry.initialBackoff >= .zero,
              retry.maxBackoff >= retry.initialBackoff, (0...1).contains(retry.jitter)
        else {
            throw .invalidConfiguration("retry needs positive attempts and deadline, 0 ≤ initial ≤ max backoff, jitter in 0...1")
        }
        return base
    }

    /// The connections' TLS configuration: ALPN `h2`, trusting `trustRoots`. Certificates are read
    /// here, so a bad CA file fails at startup, not at the first push.
    func tlsConfiguration() throws(APNsError) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        let certificates: [NIOSSLCertificate]
        switch trustRoots {
        case .system:
            return tls
        case .file(let path):
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .invalidConfiguration("cannot read CA file '\(path)'")
            }
            guard let parsed = try? NIOSSLCertificate.fromPEMBytes(Array(data)), !parsed.isEmpty else {
                throw .invalidConfiguration("CA file '\(path)' holds no PEM certificate")
            }
            certificates = parsed
        case .pem(let text):
            guard let parsed = try? NIOSSLCertificate.fromPEMBytes(Array(text.utf8)), !parsed.isEmpty else {
                throw .invalidConfiguration("trust roots hold no PEM certificate")
            }
            certificates = parsed
        }
        tls.trustRoots = .certificates(certificates)
        return tls
    }
}
