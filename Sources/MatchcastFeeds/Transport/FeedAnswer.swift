import Foundation
import NIOCore
import NIOHTTP1

/// One feed answer as it arrives, for both HTTP paths (`FeedConnection`, and AsyncHTTPClient's
/// `FeedResponseCollector`): the status, the headers (names lower-cased, repeats joined with ", ") and a body of at most
/// `limit` bytes; a larger one, announced or received, is `FeedError.tooLarge`.
struct FeedAnswer {
    let limit: Int
    let path: String
    /// The head, once it came.
    private(set) var response: FeedResponse?
    private var body: ByteBuffer?

    init(limit: Int, path: String) {
        self.limit = limit
        self.path = path
    }

    mutating func receive(_ head: HTTPResponseHead) throws(FeedError) {
        if let length = head.headers.first(name: "content-length").flatMap(Int.init), length > limit {
            throw .tooLarge(limit: limit, path: path)
        }
        var headers: [String: String] = [:]
        for (name, value) in head.headers {
            let key = name.lowercased()
            headers[key] = headers[key].map { $0 + ", " + value } ?? value
        }
        response = FeedResponse(status: Int(head.status.code), headers: headers, body: nil)
    }

    mutating func receive(_ part: inout ByteBuffer) throws(FeedError) {
        guard (body?.readableBytes ?? 0) + part.readableBytes <= limit else { throw .tooLarge(limit: limit, path: path) }
        if body == nil {
            body = part
        } else {
            body!.writeBuffer(&part)
        }
    }

    /// The whole answer; nil when no head came.
    var complete: FeedResponse? {
        guard var response else { return nil }
        if let body, body.readableBytes > 0 { response.body = Data(body.readableBytesView) }
        return response
    }
}
