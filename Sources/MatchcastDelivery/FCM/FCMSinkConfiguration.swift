import Foundation
import MatchcastCore

/// Where and how the FCM sink sends: the service account, the recipient, the endpoint, limits and retries.
///
/// `description` never shows key material or a whole registration token.
public struct FCMSinkConfiguration: Sendable, CustomStringConvertible {
    /// Where the service account key file comes from.
    public enum ServiceAccountSource: Sendable, Hashable, CustomStringConvertible {
        /// A JSON key file, as the Firebase console downloads it.
        case file(String)
        /// The file's contents (from a secret store, or tests).
        case json(Data)

        public var description: String {
            switch self {
            case .file(let path): "file(\(path))"
            case .json(let data): "json(\(data.count) bytes)"
            }
        }
    }

    /// Which registration token each delivery's message goes to.
    public enum Recipient: Sendable, Hashable, CustomStringConvertible {
        /// Every delivery to this one token: the command line's "straight to my own phone" mode, as `follow --sink
        /// apns --update-token` is for iOS. Deliveries of one update to several targets become one message.
        case registrationToken(String)
        /// Each delivery to the token it carries (`PushTarget.Kind.fcmToken`), the broker's mode: Android devices
        /// register their tokens through the API. Deliveries to other targets (APNs, Web Push) are not this sink's and
        /// are left alone.
        case deliveryTargets

        /// The registration token `delivery` is sent to; nil when it is not this sink's to send.
        func token(for delivery: Delivery) -> String? {
            switch self {
            case .registrationToken(let token): token
            case .deliveryTargets: delivery.target.kind == .fcmToken ? delivery.target.value : nil
            }
        }

        public var description: String {
            switch self {
            case .registrationToken(let token): "registrationToken(\(Redact.token(token)))"
            case .deliveryTargets: "deliveryTargets"
            }
        }
    }

    /// Google's FCM endpoint.
    public static let defaultEndpoint = "https://fcm.googleapis.com"

    /// Sends: quick, few attempts, as for APNs (a score minutes late is worth little).
    public static let defaultRetry = RetryPolicy.apns

    /// Token exchanges: a handful of attempts within a minute; the deliveries waiting on it go back to the caller after.
    public static let defaultTokenRetry = RetryPolicy(
        maxAttempts: 5, totalDeadline: .seconds(60), initialBackoff: .seconds(1), maxBackoff: .seconds(15), jitter: 0.2,
        maxRetryAfter: .seconds(30))

    public var serviceAccount: ServiceAccountSource
    public var recipient: Recipient
    /// Where a tap on the notification goes (`mc_link`), per match; none by default.
    public var deepLink: DeepLinkTemplate?
    /// Replaces `https://fcm.googleapis.com` (a fake in tests): https, or http to a loopback host; no path.
    public var endpoint: String
    /// Sends in flight at once, per `deliver` call: one per match queue at most.
    public var maxConcurrentRequests: Int
    /// One send or token exchange, answer included.
    public var requestTimeout: Duration
    /// How failed sends (429, 5xx, timeouts, connection errors) are retried.
    public var retry: RetryPolicy
    /// How failed token exchanges are retried.
    public var tokenRetry: RetryPolicy
    /// How much of a refusing answer's body is kept with its dead letters.
    public var maxErrorBodyBytes: Int
    /// Matches whose `start` attributes (full team names, competition, sport) are kept for their updates.
    public var rememberedMatches: Int

    public init(
        serviceAccount: ServiceAccountSource,
        recipient: Recipient,
        endpoint: String = FCMSinkConfiguration.defaultEndpoint,
        maxConcurrentRequests: Int = 8,
        requestTimeout: Duration = .seconds(10),
        retry: RetryPolicy = FCMSinkConfiguration.defaultRetry,
        tokenRetry: RetryPolicy = FCMSinkConfiguration.defaultTokenRetry,
        maxErrorBodyBytes: Int = 4096,
        rememberedMatches: Int = 10_000
    ) {
        self.serviceAccount = serviceAccount
        self.recipient = recipient
        self.endpoint = endpoint
        self.maxConcurrentRequests = maxConcurrentRequests
        self.requestTimeout = requestTimeout
        self.retry = retry
        self.tokenRetry = tokenRetry
        self.maxErrorBodyBytes = maxErrorBodyBytes
        self.rememberedMatches = rememberedMatches
    }

    public var description: String {
        "FCMSinkConfiguration(endpoint: \(endpoint), serviceAccount: \(serviceAccount), recipient: \(recipient), "
            + "maxConcurrentRequests: \(maxConcurrentRequests), requestTimeout: \(requestTimeout))"
    }

    /// Loads and checks the service account.
    public func loadServiceAccount() throws(FCMError) -> FCMServiceAccount {
        switch serviceAccount {
        case .file(let path): try FCMServiceAccount(contentsOfFile: path)
        case .json(let data): try FCMServiceAccount(json: data)
        }
    }

    /// Checks the values and returns the endpoint without a trailing slash.
    func validate() throws(FCMError) -> String {
        let base: String
        do {
            base = try FCMServiceAccount.Field.url(endpoint)
        } catch {
            throw .invalidConfiguration("endpoint \(error.message)")
        }
        guard let url = URL(string: base), url.path.isEmpty, url.query == nil else {
            throw .invalidConfiguration("endpoint must not have a path or query; /v1/projects/<project>/messages:send is added")
        }
        if case .registrationToken(let token) = recipient, !Self.isRegistrationToken(token) {
            throw .invalidConfiguration(
                "registration token must be 1 to 4096 ASCII letters, digits, '-', '_', ':' or '.', as FCM issues them")
        }
        guard maxConcurrentRequests > 0, requestTimeout > .zero, maxErrorBodyBytes >= 0, rememberedMatches > 0 else {
            throw .invalidConfiguration("maxConcurrentRequests, requestTimeout and rememberedMatches must be positive")
        }
        for (name, policy) in [("retry", retry), ("tokenRetry", tokenRetry)] {
            guard policy.maxAttempts > 0, policy.totalDeadline > .zero, policy.initialBackoff >= .zero,
                  policy.maxBackoff >= policy.initialBackoff, (0...1).contains(policy.jitter)
            else {
                throw .invalidConfiguration("\(name) needs positive attempts and deadline, 0 ≤ initial ≤ max backoff, jitter in 0...1")
            }
        }
        return base
    }

    /// What FCM registration tokens are made of; anything else is a paste gone wrong.
    public static func isRegistrationToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= 4096 && token.unicodeScalars.allSatisfy {
            $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || "-_:.".unicodeScalars.contains($0))
        }
    }
}
