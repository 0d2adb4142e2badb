import Foundation

/// One folder per test process for files a test hands to code by path (key files, CA files,
/// short recordings), removed when the process exits, so a test run leaves nothing behind in the
/// temporary directory however its tests end.
public enum ScratchFolder {
    /// The folder, created on first use.
    public static let url: URL = {
        let url = FileManager.default.temporaryDirectory
            .appendingPathComponent("matchcast-tests-\(getpid())-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: ScratchFolder.url) }
        return url
    }()

    /// A new, empty folder inside `url`, for a test that wants its files apart from others'.
    public static func newFolder(_ prefix: String) throws -> URL {
        let folder = url.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
