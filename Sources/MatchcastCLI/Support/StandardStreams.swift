#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Line-oriented writes to stdout and stderr for commands (stdout carries data, stderr carries talk).
package enum StandardStreams {
    package static func out(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    package static func err(_ line: String) {
        FileHandle.standardError.write(Data((line + "\n").utf8))
    }

    /// Whether stderr is a terminal (progress output only then).
    package static var stderrIsTerminal: Bool { isatty(2) == 1 }
}

/// A command failed in a way the user must hear about in one line; exits non-zero.
package struct CommandFailure: Error, CustomStringConvertible {
    package let description: String
    package init(_ description: String) { self.description = description }
}
