import MatchcastCore

/// The FCM sink could not be set up, could not get an access token, or could not hand some deliveries to FCM.
///
/// `reason` is a short fixed string for metrics and alerts. No description ever contains the private key, an
/// access token, an assertion or a whole registration token. After `access_token` or `retries_exhausted`,
/// `undelivered` holds the deliveries FCM neither accepted nor refused for good, for the caller to keep.
public struct FCMError: PartialDeliveryFailure, Sendable, CustomStringConvertible {
    enum Code: Sendable, Hashable {
        case serviceAccount(String)
        case invalidConfiguration(String)
        /// The token endpoint refused the grant (a wrong, revoked or disabled key, a clock far off): no retry helps.
        case accessTokenRefused(String)
        /// The token endpoint could not be reached, or kept failing, within the token retry policy.
        case accessTokenUnavailable(String)
        case retriesExhausted(queues: Int, last: String)
    }

    let code: Code
    /// Deliveries FCM did not take; empty for configuration and credential errors.
    public let undelivered: [Delivery]

    static func serviceAccount(_ message: String) -> FCMError {
        FCMError(code: .serviceAccount(message), undelivered: [])
    }

    static func invalidConfiguration(_ message: String) -> FCMError {
        FCMError(code: .invalidConfiguration(message), undelivered: [])
    }

    /// The same error, now carrying the deliveries it left unsent.
    func leaving(_ undelivered: [Delivery]) -> FCMError {
        FCMError(code: code, undelivered: undelivered)
    }

    /// `service_account`, `config`, `access_token_refused`, `access_token_unavailable` or `retries_exhausted`.
    public var reason: String {
        switch code {
        case .serviceAccount: "service_account"
        case .invalidConfiguration: "config"
        case .accessTokenRefused: "access_token_refused"
        case .accessTokenUnavailable: "access_token_unavailable"
        case .retriesExhausted: "retries_exhausted"
        }
    }

    /// True when retrying later cannot help until the configuration changes (the service account file, the key).
    public var isConfigurationError: Bool {
        switch code {
        case .serviceAccount, .invalidConfiguration, .accessTokenRefused: true
        case .accessTokenUnavailable, .retriesExhausted: false
        }
    }

    public var description: String {
        let left = undelivered.isEmpty ? "" : " (\(undelivered.count) deliveries left undelivered)"
        return switch code {
        case .serviceAccount(let message):
            "FCM service account: \(message)"
        case .invalidConfiguration(let message):
            "FCM configuration: \(message)"
        case .accessTokenRefused(let message):
            "FCM access token refused: \(message)\(left)"
        case .accessTokenUnavailable(let message):
            "FCM access token unavailable: \(message)\(left)"
        case .retriesExhausted(let queues, let last):
            "FCM gave up on \(undelivered.count) deliveries in \(queues) match queues (last: \(last))"
        }
    }
}
