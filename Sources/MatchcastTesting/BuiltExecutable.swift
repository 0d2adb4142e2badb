import Foundation

/// The package's executables as `swift build` leaves them beside the test bundle, for tests that run them as child
/// processes (`matchcast`, `matchcast-bench`).
public enum BuiltExecutable {
    /// `name` in the test bundle's folder or the one above it, if it is built and executable.
    public static func named(_ name: String) -> URL? {
        let folder = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        for candidate in [folder, folder.deletingLastPathComponent()] {
            let url = candidate.appendingPathComponent(name)
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }
}
