import AsyncHTTPClient
import ArgumentParser
import Foundation
import MatchcastCore
import MatchcastDelivery
import MatchcastHTTP
import MatchcastService
import NIOCore

/// `matchcast devices inspect <id>`: a device's diagnostics, read from a running serve's admin API.
struct DevicesCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices",
        abstract: "Look at a device through a running serve's admin API.",
        subcommands: [Inspect.self])

    struct Inspect: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "inspect",
            abstract: "Print a device's tokens, activities, refused tokens and what needs attention.",
            discussion: """
                Reads GET /v1/admin/devices/{id}/diagnostics from serve (--url) with the admin key (--admin-key, else \
                MATCHCAST_ADMIN_KEY). Tokens are shown redacted. Exit 1 when serve refuses or does not answer, with \
                its reason. See docs/operations.md, "A device's Live Activity never showed".

                Example:
                  matchcast devices inspect dev_01JS8Q3G0000000000000000 --url http://127.0.0.1:8080
                """)

        @Argument(help: "The device id (dev_…).")
        var deviceId: String

        @Option(help: "serve's base URL.")
        var url = "http://127.0.0.1:8080"

        @Option(help: "The admin key (default: MATCHCAST_ADMIN_KEY).")
        var adminKey: String?

        @Flag(help: "Print serve's JSON as it came.")
        var json = false

        func run() async throws {
            guard let key = adminKey ?? ProcessInfo.processInfo.environment["MATCHCAST_ADMIN_KEY"], !key.isEmpty else {
                StandardStreams.err("matchcast devices inspect: an admin key is needed (--admin-key or MATCHCAST_ADMIN_KEY)")
                throw ExitCode(2)
            }
            let base = url.hasSuffix("/") ? String(url.dropLast()) : url
            let escaped = deviceId.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? deviceId
            var request = HTTPClientRequest(url: base + "/v1/admin/devices/\(escaped)/diagnostics")
            request.headers.add(name: "authorization", value: "Bearer " + key)
            let client = HTTPClient(eventLoopGroupProvider: .singleton)
            let status: UInt
            let body: ByteBuffer
            do {
                let response = try await client.execute(request, timeout: .seconds(30))
                status = response.status.code
                body = try await response.body.collect(upTo: 4 << 20)
                try await client.shutdown()
            } catch {
                try? await client.shutdown()
                StandardStreams.err("matchcast devices inspect: \(base) did not answer: \(error)")
                throw ExitCode(1)
            }
            let data = Data(body.readableBytesView)
            guard status == 200 else {
                let message = (try? JSONDecoder().decode(APIError.Body.self, from: data)).map { "\($0.error.code): \($0.error.message)" }
                    ?? String(decoding: data.prefix(200), as: UTF8.self)
                StandardStreams.err("matchcast devices inspect: serve answered \(status): \(message)")
                throw ExitCode(1)
            }
            if json {
                StandardStreams.out(String(decoding: data, as: UTF8.self))
                return
            }
            do {
                StandardStreams.out(Self.text(try JSON.decoder().decode(DeviceDiagnostics.self, from: data)))
            } catch {
                StandardStreams.err("matchcast devices inspect: serve's answer is not a device's diagnostics: \(error)")
                throw ExitCode(1)
            }
        }

        /// What APNs last said about a token, for a line; empty when nothing was sent to it.
        /// `service`: who answered (APNs, FCM, the push service).
        static func answer(_ answer: TokenAnswers.Answer?, from service: String = "APNs") -> String {
            guard let answer else { return "" }
            return ", \(service) last answered \(answer.status)" + (answer.reason.map { " \($0)" } ?? "") + " at \(JSON.formatDate(answer.at))"
        }

        /// The diagnostics as lines for a terminal.
        static func text(_ diagnostics: DeviceDiagnostics) -> String {
            let date = { (value: Date?) in value.map { JSON.formatDate($0) } ?? "-" }
            let app = diagnostics.app.map { $0 == AppCatalog.defaultId ? "" : " (app \($0))" } ?? ""
            var lines = ["device \(diagnostics.deviceId)\(app), registered \(date(diagnostics.registeredAt))"]
            if let token = diagnostics.pushToStartToken {
                // An Android or web device's address shows as `fcm:…` or `webpush:<origin>/…` (`DirectAddress.redacted`).
                if token.token.hasPrefix("fcm:") || token.token.hasPrefix("webpush:") {
                    let service = token.token.hasPrefix("fcm:") ? "FCM" : "the push service"
                    lines.append("address \(token.token), set \(token.ageSeconds) s ago"
                        + Self.answer(token.lastAnswer, from: service))
                } else {
                    lines.append("push-to-start token \(token.token) (\(token.environment.rawValue)), set \(token.ageSeconds) s ago"
                        + Self.answer(token.lastAnswer))
                }
            } else {
                lines.append("push-to-start token: none")
            }
            lines.append("follows: " + (diagnostics.follows.isEmpty ? "none" : diagnostics.follows.joined(separator: ", ")))
            lines.append("activities: " + (diagnostics.activities.isEmpty ? "none" : ""))
            for activity in diagnostics.activities {
                var line = "  \(activity.activityId) \(activity.matchId) \(activity.phase)"
                line += ", started \(date(activity.startedAt)), last sent \(date(activity.lastSentAt))"
                if let channel = activity.channelId { line += ", on channel \(channel)" }
                line += activity.updateToken.map { ", update token \($0)" } ?? ", no update token"
                if let age = activity.updateTokenAgeSeconds { line += " (first reported \(age) s ago)" }
                line += Self.answer(activity.updateTokenLastAnswer)
                if let budget = activity.highPriority {
                    line += ", priority 10 this hour: \(budget.lastHour)"
                        + (budget.matchLastHour.map { " (its match \($0) of \(budget.ceiling))" } ?? " of \(budget.ceiling)")
                }
                lines.append(line)
                for flag in activity.attention { lines.append("    ! \(flag.code): \(flag.message)") }
            }
            if let total = diagnostics.highPriorityLastHour, total > 0 {
                lines.append("priority-10 pushes to its activities this hour: \(total)")
            }
            lines.append("refused tokens: " + (diagnostics.refusals.isEmpty ? "none" : ""))
            for refusal in diagnostics.refusals {
                lines.append("  \(date(refusal.at)) \(refusal.kind) \(refusal.token): \(refusal.reason)"
                    + (refusal.activityId.map { " (activity \($0))" } ?? ""))
            }
            for flag in diagnostics.attention { lines.append("! \(flag.code): \(flag.message)") }
            if diagnostics.attention.isEmpty && diagnostics.activities.allSatisfy(\.attention.isEmpty) {
                lines.append("nothing needs attention")
            }
            return lines.joined(separator: "\n")
        }
    }
}
