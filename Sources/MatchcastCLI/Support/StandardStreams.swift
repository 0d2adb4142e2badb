#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Line-oriented writes to stdout and stderr for commands (stdout carries data, stderr carries talk).
enum StandardStreams {
    static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    static func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Whether stderr is a terminal (progress output only then).
    static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// A command failed in a way the user must hear about in one line; exits non-zero.
struct CommandFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
