import ArgumentParser
import MatchcastCLI

/// The executable: parses the command line and runs the chosen command asynchronously.
@main
struct Entry {
    static func main() async {
        do {
            var command = try MatchcastCommand.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            MatchcastCommand.exit(withError: error)
        }
    }
}
