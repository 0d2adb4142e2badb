import AsyncHTTPClient
import Foundation
import Logging
import MatchcastCore
import MatchcastDelivery

/// The broadcast channel `follow` makes for its match (iOS 18): created before polling, named in the
/// start, deleted when the match is over or on Ctrl-C. Its id is noted in a state file per
/// environment, app and match, so a run that crashed leaves a note and the next run for the same
/// match deletes that channel first (APNs' channel list carries no match, so the note is the only
/// way to tell follow's channel from the app's others).
struct FollowChannels {
    let client: APNsChannelClient
    let channelId: String
    let stateFile: URL

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    static func open(
        sinks: [any DeliverySink], configuration: BrokerConfiguration, client: HTTPClient?, matchId: String, stateDir: String?,
        logger: Logger
    ) async throws -> FollowChannels {
        let channelClient: APNsChannelClient
        do {
            guard let made = try SinkFactory(configuration: configuration, client: client, logger: logger)
                .channelClient(for: sinks, always: true)
            else { throw Failure(description: "no channel client") }
            channelClient = made
        } catch let error as ConfigurationError {
            throw Failure(description: SinkOptions.message(error))
        }
        let file = stateFile(stateDir: stateDir, configuration: configuration, matchId: matchId)
        if let leftover = try? String(contentsOf: file, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines),
           !leftover.isEmpty {
            do {
                let existed = try await channelClient.delete(channelId: leftover)
                StandardStreams.err("matchcast follow: \(existed ? "deleted" : "forgot") the broadcast channel a previous run left for \(matchId)")
                try? FileManager.default.removeItem(at: file)
            } catch {
                channelClient.shutdown()
                throw Failure(description: "cannot delete the channel a previous run left: \(error)")
            }
        }
        let channelId: String
        do {
            channelId = try await channelClient.create(storagePolicy: .mostRecent)
        } catch {
            channelClient.shutdown()
            throw Failure(description: "cannot create a broadcast channel: \(error) (use --update-token for an activity the app started)")
        }
        do {
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data((channelId + "\n").utf8).write(to: file, options: .atomic)
        } catch {
            StandardStreams.err("matchcast follow: cannot note the channel in \(file.path): \(error.localizedDescription)")
        }
        return FollowChannels(client: channelClient, channelId: channelId, stateFile: file)
    }

    /// Deletes the channel and its note.
    func close() async throws {
        defer { client.shutdown() }
        do {
            try await client.delete(channelId: channelId)
        } catch {
            throw Failure(description: "cannot delete broadcast channel: \(error)")
        }
        try? FileManager.default.removeItem(at: stateFile)
    }

    /// `<state dir>/follow-channels/<environment>-<bundle id>-<match id>`; the state dir is `--state-dir`,
    /// else `$XDG_STATE_HOME/matchcast`, else `~/.local/state/matchcast`.
    static func stateFile(stateDir: String?, configuration: BrokerConfiguration, matchId: String) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let stateDir {
            base = URL(fileURLWithPath: stateDir)
        } else if let xdg = environment["XDG_STATE_HOME"], !xdg.isEmpty {
            base = URL(fileURLWithPath: xdg).appendingPathComponent("matchcast")
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".local/state/matchcast")
        }
        let safe = { (text: String) in
            String(text.unicodeScalars.map { CharacterSet.alphanumerics.contains($0) || $0 == "." || $0 == "-" ? Character($0) : "_" })
        }
        let name = "\(configuration.apns.environment.rawValue)-\(safe(configuration.topicBundleId))-\(safe(matchId))"
        return base.appendingPathComponent("follow-channels").appendingPathComponent(name)
    }
}

/// Hands every batch to several sinks in order (`follow` with more than one `--sink`).
struct FanOutSink: DeliverySink {
    let sinks: [any DeliverySink]
    var name: String { sinks.map(\.name).joined(separator: "+") }

    func deliver(_ batch: [Delivery]) async throws {
        for sink in sinks { try await sink.deliver(batch) }
    }

    func flush() async throws {
        for sink in sinks { try await sink.flush() }
    }
}
