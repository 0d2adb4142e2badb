import Foundation
import MatchcastCore

extension RecordingLine {
    /// The line as the recording stores it: one JSON object, keys sorted
    /// (`body`, `headers`, `request`, `status`, `t`), no newline. Equal lines give equal bytes.
    ///
    /// The body is embedded as recorded, apart from line breaks between its tokens (JSON strings
    /// cannot hold raw ones), which would split the line.
    public func encoded() throws(RecordingWriteError) -> Data {
        try validate()
        var out = Data("{".utf8)
        if let body = try normalizedBody() {
            out.append(contentsOf: Data("\"body\":".utf8))
            out.append(body)
            out.append(UInt8(ascii: ","))
        }
        out.append(contentsOf: Data("\"headers\":".utf8))
        out.append(try Self.json(headers, field: "headers"))
        out.append(contentsOf: Data(",\"request\":".utf8))
        out.append(try Self.json(request, field: "request"))
        out.append(contentsOf: Data(",\"status\":\(status),\"t\":".utf8))
        out.append(try Self.json(t, field: "t"))
        out.append(UInt8(ascii: "}"))
        return out
    }

    /// The rules a reader enforces, applied before anything is written.
    func validate() throws(RecordingWriteError) {
        guard t.isFinite, t >= 0 else { throw .invalid(field: "t", reason: "must be a finite number >= 0, got \(t)") }
        guard request.hasPrefix("/") else {
            throw .invalid(field: "request", reason: "must be a path starting with '/', got '\(request.prefix(40))'")
        }
        guard Self.statusRange.contains(status) else {
            throw .invalid(field: "status", reason: "must be in 100...599, got \(status)")
        }
        if status == 304, let body, !body.isEmpty {
            throw .invalid(field: "body", reason: "a 304 line has no body")
        }
    }

    static let statusRange = 100...599

    private func normalizedBody() throws(RecordingWriteError) -> Data? {
        guard let body else { return nil }
        let compact = Data(body.filter { $0 != 0x0A && $0 != 0x0D })
        let trimmed = JSONObjectScanner.trimmed(compact)
        guard !trimmed.isEmpty else { return nil }
        guard (try? JSONSerialization.jsonObject(with: trimmed, options: [.fragmentsAllowed])) != nil else {
            throw .invalid(field: "body", reason: "not valid JSON")
        }
        return trimmed
    }

    private static func json(_ value: some Encodable, field: String) throws(RecordingWriteError) -> Data {
        do {
            return try JSON.encoder().encode(value)
        } catch {
            throw .invalid(field: field, reason: "cannot be encoded: \(error)")
        }
    }
}
