import Foundation
import Hummingbird
import MatchcastCore

/// Decodes request bodies with `JSON.decoder()`; any failure is a 400 `invalid_request` naming the field.
///
/// Unknown fields are ignored. The body size limit is enforced earlier, by `BodyLimitMiddleware`.
public struct APIRequestDecoder: RequestDecoder {
    public init() {}

    public func decode<T: Decodable>(_ type: T.Type, from request: Request, context: some RequestContext) async throws -> T {
        let buffer: ByteBuffer
        do {
            buffer = try await request.body.collect(upTo: context.maxUploadSize)
        } catch let error as any HTTPResponseError where error.status == .contentTooLarge {
            throw APIError.contentTooLarge(limit: context.maxUploadSize)
        }
        return try Self.decode(type, from: Data(buffer.readableBytesView))
    }

    /// Decodes `data`, turning a `DecodingError` into `field 'x': reason`.
    static func decode<T: Decodable>(_ type: T.Type, from data: Data) throws(APIError) -> T {
        do {
            return try JSON.decoder().decode(type, from: data)
        } catch {
            let input = InputError(error)
            throw APIError.invalidRequest(input.field.isEmpty ? "request body: \(input.reason)" : input.description)
        }
    }
}
