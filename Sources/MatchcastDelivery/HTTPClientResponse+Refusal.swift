import AsyncHTTPClient
import NIOCore

extension HTTPClientResponse {
    /// The body of an answer as a sink keeps it: nothing of an accepted (2xx) one, the first `keep` bytes of a
    /// refusal, for its dead letter. The rest is read and dropped, up to 1 MiB; past that the read stops and the
    /// connection goes, rather than read an endless body.
    func keptBody(ofRefusalUpTo keep: Int) async throws -> [UInt8] {
        let keep = (200..<300).contains(Int(status.code)) ? 0 : keep
        var kept: [UInt8] = []
        var read = 0
        for try await chunk in body {
            if kept.count < keep { kept.append(contentsOf: chunk.readableBytesView.prefix(keep - kept.count)) }
            read += chunk.readableBytes
            if read > 1 << 20 { break }
        }
        return kept
    }
}
