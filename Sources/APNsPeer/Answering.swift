import NIOCore
import NIOHPACK
import NIOHTTP2

extension APNsPeer {
    /// Bodies beyond this are not kept (APNs takes 4 KB; `Request.shapeProblem` refuses more).
    static let maxBody = 64 << 10
}

extension APNsPeer.Request {
    /// APNs' own refusal of a request of the wrong shape (checked here, independently of the client); nil when it
    /// has the right one.
    var shapeProblem: APNsPeer.Answer? {
        guard method == "POST" else { return .error(status: 405, reason: "MethodNotAllowed") }
        guard let token, !token.isEmpty, token.utf8.allSatisfy(Self.isHexDigit) else {
            return .error(status: 400, reason: "BadDeviceToken")
        }
        guard let authorization, authorization.hasPrefix("bearer ") else {
            return .error(status: 403, reason: "MissingProviderToken")
        }
        guard topic?.isEmpty == false else { return .error(status: 400, reason: "MissingTopic") }
        guard pushType != nil else { return .error(status: 400, reason: "InvalidPushType") }
        guard !body.isEmpty else { return .error(status: 400, reason: "PayloadEmpty") }
        guard body.count <= 4096 else { return .error(status: 413, reason: "PayloadTooLarge") }
        return nil
    }

    private static func isHexDigit(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (97...102).contains(byte) || (65...70).contains(byte)
    }
}

extension APNsPeer.Answer {
    /// What answering `request` sends on its stream, in order, and the status it answers with (nil for a reset): a
    /// status's header block and, for an error, its JSON body; or RST_STREAM.
    func payloads(to request: APNsPeer.Request, filler: Int, allocator: ByteBufferAllocator)
        -> (status: Int?, payloads: [HTTP2Frame.FramePayload]) {
        let status: Int
        switch self {
        case .reset(let code):
            return (nil, [.rstStream(HTTP2ErrorCode(networkCode: code))])
        case .ok:
            status = 200
        case .error(let code, _):
            status = code
        }
        var fields = HPACKHeaders()
        fields.add(name: ":status", value: String(status))
        fields.add(name: "apns-id", value: request.apnsID ?? "00000000-0000-0000-0000-000000000000")
        if filler > 0 {
            fields.add(name: "x-filler", value: String((0..<filler).map { _ in Self.alphabet.randomElement()! }))
        }
        guard case .error(_, let reason) = self else { return (status, [.headers(.init(headers: fields, endStream: true))]) }
        fields.add(name: "content-type", value: "application/json")
        var buffer = allocator.buffer(capacity: 32 + reason.utf8.count)
        buffer.writeString(#"{"reason":"\#(reason)"}"#)
        return (status, [.headers(.init(headers: fields)), .data(.init(data: .byteBuffer(buffer), endStream: true))])
    }

    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789")
}
