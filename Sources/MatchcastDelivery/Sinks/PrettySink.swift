#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import MatchcastCore

/// One readable line per delivery, for people watching `matchcast follow --pretty`:
/// `start  p10 MI 0/0 (0.0) · Live — Mumbai Indians v Chennai Super Kings`.
public struct PrettySink: DeliverySink {
    public let name = "pretty"
    private let descriptor: Int32

    public init(fileDescriptor: Int32 = 1) {
        descriptor = fileDescriptor
    }

    public func deliver(_ batch: [Delivery]) async throws {
        var text = ""
        for delivery in batch {
            text += Self.line(delivery) + "\n"
        }
        try FileDescriptorWriter.writeAll(Array(text.utf8), to: descriptor)
    }

    /// The readable form of one delivery.
    public static func line(_ delivery: Delivery) -> String {
        let aps = delivery.payload.aps
        let state = aps.contentState
        let event = aps.event.rawValue.padding(toLength: 6, withPad: " ", startingAt: 0)
        var line = "\(event) p\(delivery.apns.priority) \(state.summary) [\(state.statusText)]"
        if let alert = aps.alert { line += " — \(alert.body)" }
        if aps.event == .end, let result = state.result, aps.alert?.body != result { line += " — \(result)" }
        return line
    }
}
