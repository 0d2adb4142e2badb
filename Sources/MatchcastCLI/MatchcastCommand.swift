import ArgumentParser

/// `matchcast`: the live match notification broker's command line.
public struct MatchcastCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "matchcast",
        abstract: "Live match notification broker for iOS Live Activities.",
        discussion: """
            Polls score feeds, turns each change into display-ready Live Activity content and pushes it \
            to every device that follows the match.

            Examples:
              matchcast follow cricket-t20 --feed "fake?speed=600"
              matchcast render match.json
              matchcast fake-feed --port 8090 --speed 60
            """,
        subcommands: [
            ServeCommand.self, FollowCommand.self, ReplayCommand.self, RecordCommand.self, ImportCommand.self, RenderCommand.self,
            FakeFeedCommand.self, DevicesCommand.self, FeedsCommand.self, WebPushKeysCommand.self,
        ]
    )

    public init() {}
}
