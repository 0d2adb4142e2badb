import MatchcastCore

/// Why a feed poll failed.
///
/// `reason` is a short fixed string for metrics labels and alerts; `description` says what happened
/// to which resource (`HTTP 503 from /matches/x`, `decoding /matches/x: field 'match.score.runs': expected a number`).
public struct FeedError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case transport(String)
        case timeout
        case status(Int)
        case decode(InputError)
        case tooLarge(limit: Int)
        case invalidConfiguration(String)
    }

    private let code: Code
    /// The request path that failed, relative to the feed's base (`/matches/x`); empty for configuration errors.
    public let path: String

    private init(_ code: Code, path: String) {
        self.code = code
        self.path = path
    }

    /// No answer came: refused, reset, DNS, TLS. `underlying` is described, not kept, so the error stays `Sendable` and `Hashable`.
    public static func transport(_ underlying: any Error, path: String) -> FeedError {
        FeedError(.transport(String(describing: underlying)), path: path)
    }

    /// No complete answer within the request's deadline.
    public static func timeout(path: String) -> FeedError {
        FeedError(.timeout, path: path)
    }

    /// The feed answered with a status that is neither success nor "not modified".
    public static func status(_ status: Int, path: String) -> FeedError {
        FeedError(.status(status), path: path)
    }

    /// The body could not be read as the resource it should be; `error` names the field.
    public static func decode(_ error: InputError, path: String) -> FeedError {
        FeedError(.decode(error), path: path)
    }

    /// The body was longer than the transport accepts.
    public static func tooLarge(limit: Int, path: String) -> FeedError {
        FeedError(.tooLarge(limit: limit), path: path)
    }

    /// The feed was configured wrongly (a base URL that is not http or https).
    public static func invalidConfiguration(_ message: String) -> FeedError {
        FeedError(.invalidConfiguration(message), path: "")
    }

    /// One of `transport`, `timeout`, `status`, `decode`, `too_large`, `config`: never carries values.
    public var reason: String {
        switch code {
        case .transport: "transport"
        case .timeout: "timeout"
        case .status: "status"
        case .decode: "decode"
        case .tooLarge: "too_large"
        case .invalidConfiguration: "config"
        }
    }

    /// The HTTP status, for a `status` error.
    public var status: Int? {
        if case .status(let status) = code { return status }
        return nil
    }

    /// The field at fault, for a `decode` error.
    public var inputError: InputError? {
        if case .decode(let error) = code { return error }
        return nil
    }

    public var description: String {
        switch code {
        case .transport(let underlying): "no answer from \(path): \(underlying)"
        case .timeout: "timed out waiting for \(path)"
        case .status(let status): "HTTP \(status) from \(path)"
        case .decode(let error): "decoding \(path): \(error)"
        case .tooLarge(let limit): "body of \(path) is larger than \(limit) bytes"
        case .invalidConfiguration(let message): "invalid feed configuration: \(message)"
        }
    }
}
