import Foundation

/// Where a tap on an Android Live Update or a browser notification takes the user: a URL with `{matchId}` in it,
/// made per match (`link(matchId:)`) and carried as the live surface's `deepLink` (`mc_link`, `data.link`).
///
/// The app's own scheme (`myapp://match/{matchId}`) or a web page (`https://scores.example.com/m/{matchId}`). APNs
/// has no place for it: an iOS widget sets its own `widgetURL`.
public struct DeepLinkTemplate: Sendable, Hashable, CustomStringConvertible {
    public let template: String

    /// The placeholder a match's id replaces.
    public static let placeholder = "{matchId}"
    /// A link past this is refused: it must fit the surface beside the score (`LiveSurface`'s size rule drops it
    /// before anything else otherwise).
    public static let maximumBytes = 512

    public struct Invalid: Error, Sendable, Hashable, CustomStringConvertible {
        public let description: String
    }

    /// Checks the template: a scheme (`letters:`), `{matchId}` once, no spaces or quotes, at most `maximumBytes`.
    public init(_ template: String) throws(Invalid) {
        guard !template.isEmpty, template.utf8.count <= Self.maximumBytes else {
            throw Invalid(description: "must be 1 to \(Self.maximumBytes) bytes")
        }
        guard let colon = template.firstIndex(of: ":"), template.startIndex < colon,
              template[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+.-".contains($0)) }),
              template.first?.isLetter == true
        else {
            throw Invalid(description: "must start with a scheme, as myapp://match/{matchId} or https://example.com/m/{matchId}")
        }
        guard template.components(separatedBy: Self.placeholder).count == 2 else {
            throw Invalid(description: "must hold {matchId} exactly once")
        }
        guard !template.contains(where: { $0.isWhitespace || $0 == "\"" || $0 == "<" || $0 == ">" || !$0.isASCII }) else {
            throw Invalid(description: "must be ASCII without spaces, quotes or angle brackets")
        }
        self.template = template
    }

    /// The link to `matchId`; characters outside the URL path set (`A-Z a-z 0-9 - . _ ~`) are percent-encoded.
    public func link(matchId: String) -> String {
        var encoded = ""
        for byte in matchId.utf8 {
            let scalar = Unicode.Scalar(byte)
            if (65...90).contains(byte) || (97...122).contains(byte) || (48...57).contains(byte) || "-._~".unicodeScalars.contains(scalar) {
                encoded.unicodeScalars.append(scalar)
            } else {
                encoded += "%" + String(byte, radix: 16, uppercase: true).leftPadded(to: 2)
            }
        }
        return template.replacingOccurrences(of: Self.placeholder, with: encoded)
    }

    public var description: String { template }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
