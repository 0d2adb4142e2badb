import ArgumentParser
import Foundation
import MatchcastDelivery

/// `matchcast webpush-keys --private-key-file FILE`: a VAPID key pair for `--sink webpush`.
struct WebPushKeysCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webpush-keys",
        abstract: "Make a VAPID key pair for --sink webpush: the private key to a file, the public key to stdout.",
        discussion: """
            Writes a new P-256 private key as PEM to FILE (readable by you only) and prints its public key in \
            base64url: the applicationServerKey a web app passes to pushManager.subscribe() (docs/webpush.md). \
            Give the same FILE to --vapid-key-file. A FILE that exists is never overwritten: the public key of the \
            key in it is printed instead.

            Example:
              matchcast webpush-keys --private-key-file vapid.pem
            """
    )

    @Option(help: "Where the private key goes (or, if it exists, the key whose public key to print).")
    var privateKeyFile: String

    func run() throws {
        if FileManager.default.fileExists(atPath: privateKeyFile) {
            let text: String
            do {
                text = try String(contentsOfFile: privateKeyFile, encoding: .utf8)
            } catch {
                StandardStreams.err("matchcast webpush-keys: cannot read \(privateKeyFile): \(error.localizedDescription)")
                throw ExitCode(1)
            }
            do {
                let key = try VAPIDCredentials.privateKey(fromFileText: text, source: privateKeyFile)
                StandardStreams.out(Base64URL.encode(key.publicKey.x963Representation))
                StandardStreams.err("matchcast webpush-keys: \(privateKeyFile) exists and was kept; above is its public key")
            } catch {
                StandardStreams.err("matchcast webpush-keys: \(error)")
                throw ExitCode(1)
            }
            return
        }
        let pair = VAPIDCredentials.makeKeyPair()
        guard FileManager.default.createFile(
            atPath: privateKeyFile, contents: Data(pair.privateKeyPEM.utf8), attributes: [.posixPermissions: 0o600])
        else {
            StandardStreams.err("matchcast webpush-keys: cannot write \(privateKeyFile)")
            throw ExitCode(1)
        }
        StandardStreams.out(pair.publicKey)
        StandardStreams.err("matchcast webpush-keys: wrote the private key to \(privateKeyFile) (--vapid-key-file); "
            + "above is the public key for pushManager.subscribe({applicationServerKey})")
    }
}
