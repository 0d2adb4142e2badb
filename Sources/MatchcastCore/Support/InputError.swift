/// Input from outside (a feed, a request, a recording) that Matchcast refuses, naming the field at fault.
///
/// `description` is one line: `field 'score.innings[0].runs': must be in 0...1000000, got -3`.
public struct InputError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Dotted path of the offending field (`matches[2].score.innings[0].runs`), or empty for the whole input.
    public let field: String
    public let reason: String

    public init(field: String, reason: String) {
        self.field = field
        self.reason = reason
    }

    public var description: String {
        field.isEmpty ? reason : "field '\(field)': \(reason)"
    }

    /// Turns a `DecodingError` into the field it names and a short reason.
    public init(_ error: any Error) {
        guard let error = error as? DecodingError else {
            if let error = error as? InputError {
                self = error
            } else {
                self.init(field: "", reason: "\(error)")
            }
            return
        }
        switch error {
        case .typeMismatch(let type, let context):
            self.init(field: Self.path(context.codingPath), reason: "expected \(Self.typeName(type))")
        case .valueNotFound(let type, let context):
            self.init(field: Self.path(context.codingPath), reason: "expected \(Self.typeName(type)), found null")
        case .keyNotFound(let key, let context):
            self.init(field: Self.path(context.codingPath + [key]), reason: "missing")
        case .dataCorrupted(let context):
            let reason = context.underlyingError.map { _ in "not valid JSON" } ?? context.debugDescription
            self.init(field: Self.path(context.codingPath), reason: Self.shorten(reason))
        @unknown default:
            self.init(field: "", reason: "\(error)")
        }
    }

    static func path(_ keys: [any CodingKey]) -> String {
        var out = ""
        for key in keys {
            if let index = key.intValue {
                out += "[\(index)]"
            } else {
                if !out.isEmpty { out += "." }
                out += key.stringValue
            }
        }
        return out
    }

    private static func typeName(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: return "a string"
        case is Int.Type, is Double.Type: return "a number"
        case is Bool.Type: return "true or false"
        default:
            let name = "\(type)"
            return name.hasPrefix("Array") ? "an array" : name.hasPrefix("Dictionary") ? "an object" : "a value of type \(name)"
        }
    }

    private static func shorten(_ text: String) -> String {
        // Enum decoding failures say "Cannot initialize Sport from invalid String value rugby".
        if text.hasPrefix("Cannot initialize"), let range = text.range(of: "invalid String value ") {
            return "unknown value '\(text[range.upperBound...])'"
        }
        return text
    }
}
