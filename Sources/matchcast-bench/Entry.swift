import ArgumentParser
import MatchcastBench

/// The benchmark executable: parses the command line and runs the chosen benchmark asynchronously.
@main
struct Entry {
    static func main() async {
        do {
            var command = try BenchCommand.parseAsRoot()
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            BenchCommand.exit(withError: error)
        }
    }
}
