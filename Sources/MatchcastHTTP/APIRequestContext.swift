import Hummingbird

/// The request context of the API: Matchcast's JSON coders (ISO 8601 dates, sorted keys) on both sides.
public struct APIRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
    }

    public var requestDecoder: APIRequestDecoder { APIRequestDecoder() }
    public var responseEncoder: APIResponseEncoder { APIResponseEncoder() }
}
