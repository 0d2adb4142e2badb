import Hummingbird
import MatchcastCore

/// Encodes response bodies with `JSON.encoder()`, so the same value is always the same bytes.
public struct APIResponseEncoder: ResponseEncoder {
    public init() {}

    public func encode(_ value: some Encodable, from request: Request, context: some RequestContext) throws -> Response {
        let data = try JSON.encoder().encode(value)
        return Response(
            status: .ok,
            headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data))
        )
    }
}
