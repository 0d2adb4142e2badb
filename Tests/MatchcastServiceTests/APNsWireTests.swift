import Foundation
import MatchcastCore
@testable import MatchcastDelivery
import MatchcastTesting
import NIOCore
import Testing

/// The hand-written HTTP/2 framing of the APNs sender against the fake (which decodes header
/// blocks with NIOHPACK): flow control when the server keeps its windows small, header blocks
/// larger than a frame (CONTINUATION), requests without a body, and requests with any path and
/// header fields (the entry point broadcasts use).
@Suite("APNs HTTP/2 framing", .serialized, .timeLimit(.minutes(2)))
struct APNsWireTests {
    private typealias F = APNsFixture

    @Test func smallServerWindowsStillCarryEveryBodyWhole() async throws {
        let (key, _) = try F.credentials()
        // Bodies of about 270 bytes against 100-byte stream windows and the default 64 KiB connection
        // window: every body goes in several DATA frames, each after a WINDOW_UPDATE.
        let deliveries = F.deliveries(600)
        try await F.withServer(key: key, receiveWindow: 100) { server, client in
            let sink = try F.sink(server: server, client: client, key: key, maxConnections: 1)
            defer { sink.shutdown() }
            try await sink.deliver(deliveries)
            let accepted = server.accepted
            #expect(accepted.count == 600)
            #expect(Set(accepted.map(\.token)) == Set(deliveries.map(\.target.value)))
            let payload = deliveries[0].payload.bytes
            #expect(payload.count > 200, "several windows per body")
            #expect(accepted.allSatisfy { $0.body == payload })
            #expect(server.duplicates == 0)
            #expect(server.connectionsAccepted == 1)
        }
    }

    @Test func aHeaderBlockLargerThanAFrameGoesInContinuationFrames() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key)
            defer { sink.shutdown() }
            let jwt = try sink.signer.currentToken().jwt
            // 20,000 bytes of one field: over the 16,384-byte frame size, under the fake's header-list limit.
            let padding = String(repeating: "p", count: 20_000)
            let head = APNsRequestHead(fields: [
                ("authorization", "bearer " + jwt), ("apns-push-type", "liveactivity"), ("apns-topic", F.topic),
                ("apns-priority", "10"), ("x-padding", padding),
            ])
            let body = ByteBuffer(bytes: F.payload().bytes)
            let exchanges = await sink.pool.send([
                APNsRequest(head: head, path: "/3/device/" + F.token(1), apnsID: "8e7b0f6c-6a43-4b5e-9a53-0e6f3b3f0a11", body: body),
                APNsRequest(head: head, path: "/3/device/" + F.token(2), apnsID: "8e7b0f6c-6a43-4b5e-9a53-0e6f3b3f0a12", body: body),
            ])
            #expect(exchanges.count == 2)
            for exchange in exchanges {
                guard case .answered(let response) = exchange else {
                    Issue.record("no answer: \(exchange)")
                    continue
                }
                #expect(response.status == 200)
                #expect(response.headers.first(name: "apns-id")?.hasPrefix("8e7b0f6c") == true)
            }
            #expect(Set(server.accepted.map(\.token)) == [F.token(1), F.token(2)])
        }
    }

    @Test func anyPathAndFieldsGoThroughTheSameConnections() async throws {
        let (key, _) = try F.credentials()
        try await F.withServer(key: key) { server, client in
            let sink = try F.sink(server: server, client: client, key: key)
            defer { sink.shutdown() }
            let jwt = try sink.signer.currentToken().jwt
            // A GET without a body, and a POST to a path the fake does not serve: answered as APNs would.
            let get = APNsRequestHead(method: "GET", fields: [("authorization", "bearer " + jwt)])
            let post = APNsRequestHead(fields: [("authorization", "bearer " + jwt), ("apns-push-type", "liveactivity")])
            let exchanges = await sink.pool.send([
                APNsRequest(head: get, path: "/3/device/" + F.token(3), apnsID: nil, body: ByteBuffer()),
                APNsRequest(head: post, path: "/2/unknown", apnsID: nil, body: ByteBuffer(string: "{}")),
            ])
            let statuses = exchanges.map { exchange -> Int? in
                if case .answered(let response) = exchange { return response.status }
                return nil
            }
            #expect(statuses == [405, 404])
            let reasons = exchanges.map { exchange -> String? in
                if case .answered(let response) = exchange { return APNsAnswer.reason(fromBody: response.body) }
                return nil
            }
            #expect(reasons == ["MethodNotAllowed", "BadPath"])
            #expect(server.log.map(\.status) == [405, 404])
        }
    }
}
