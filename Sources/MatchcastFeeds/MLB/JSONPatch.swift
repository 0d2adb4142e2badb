/// JSON Patch (RFC 6902): `add`, `remove`, `replace`, `move`, `copy` and `test` operations applied in order to a
/// `JSONValue`; JSON Pointers (RFC 6901) with `~0`/`~1` escapes and `-` for the end of an array.
struct JSONPatch: Sendable {
    struct Operation: Sendable {
        var op: String
        var path: String
        var from: String?
        var value: JSONValue?
    }

    /// Why an operation could not be applied: its index, op and path, and what was wrong.
    struct Failure: Error, CustomStringConvertible {
        var index: Int
        var op: String
        var path: String
        var reason: String
        var description: String { "operation \(index) (\(op) \(path.prefix(120))): \(reason)" }
    }

    var operations: [Operation]

    init(operations: [Operation]) {
        self.operations = operations
    }

    /// A patch document: an array of `{"op", "path", "from"?, "value"?}`; nil when it is not one.
    init?(_ document: JSONValue) {
        guard case .array(let items) = document else { return nil }
        var operations: [Operation] = []
        for item in items {
            guard let op = item["op"]?.string, let path = item["path"]?.string else { return nil }
            operations.append(Operation(op: op, path: path, from: item["from"]?.string, value: item["value"]))
        }
        self.operations = operations
    }

    /// `document` with every operation applied, or the first that could not be (the document is then unchanged).
    func applied(to document: JSONValue) throws(Failure) -> JSONValue {
        var result = document
        for (index, operation) in operations.enumerated() {
            do {
                try Self.apply(operation, to: &result)
            } catch {
                throw Failure(index: index, op: operation.op, path: operation.path, reason: error.reason)
            }
        }
        return result
    }

    struct Problem: Error {
        var reason: String
    }

    private static func apply(_ operation: Operation, to document: inout JSONValue) throws(Problem) {
        let path = try pointer(operation.path)
        switch operation.op {
        case "add":
            try add(try required(operation.value), at: path, in: &document)
        case "remove":
            _ = try remove(at: path, in: &document)
        case "replace":
            _ = try remove(at: path, in: &document)
            try add(try required(operation.value), at: path, in: &document)
        case "move":
            let from = try pointer(try required(operation.from))
            guard !(path.count > from.count && Array(path.prefix(from.count)) == from) else {
                throw Problem(reason: "cannot move a value into itself")
            }
            let value = try remove(at: from, in: &document)
            try add(value, at: path, in: &document)
        case "copy":
            let value = try self.value(at: try pointer(try required(operation.from)), in: document)
            try add(value, at: path, in: &document)
        case "test":
            guard try value(at: path, in: document) == (try required(operation.value)) else {
                throw Problem(reason: "test failed")
            }
        default:
            throw Problem(reason: "unknown op")
        }
    }

    private static func required<T>(_ value: T?) throws(Problem) -> T {
        guard let value else { throw Problem(reason: "missing value or from") }
        return value
    }

    /// The reference tokens of a JSON Pointer (`/a/b~1c` → `["a", "b/c"]`); `""` is the whole document.
    static func pointer(_ text: String) throws(Problem) -> [String] {
        guard !text.isEmpty else { return [] }
        guard text.hasPrefix("/") else { throw Problem(reason: "a pointer starts with /") }
        return text.dropFirst().split(separator: "/", omittingEmptySubsequences: false).map {
            $0.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")
        }
    }

    private static func value(at path: [String], in document: JSONValue) throws(Problem) -> JSONValue {
        var current = document
        for token in path {
            switch current {
            case .object(let members):
                guard let next = members[token] else { throw Problem(reason: "no member '\(token.prefix(60))'") }
                current = next
            case .array(let items):
                current = items[try index(token, count: items.count, appending: false)]
            default:
                throw Problem(reason: "'\(token.prefix(60))' is inside neither an object nor an array")
            }
        }
        return current
    }

    private static func index(_ token: String, count: Int, appending: Bool) throws(Problem) -> Int {
        if appending, token == "-" { return count }
        guard let index = Int(token), index >= 0, token == String(index), index < count + (appending ? 1 : 0) else {
            throw Problem(reason: "'\(token.prefix(20))' is not an index of an array of \(count)")
        }
        return index
    }

    private static func add(_ value: JSONValue, at path: [String], in document: inout JSONValue) throws(Problem) {
        guard let last = path.last else {
            document = value
            return
        }
        try change(Array(path.dropLast()), in: &document) { (parent: inout JSONValue) throws(Problem) in
            switch parent {
            case .object(var members):
                members[last] = value
                parent = .object(members)
            case .array(var items):
                items.insert(value, at: try index(last, count: items.count, appending: true))
                parent = .array(items)
            default:
                throw Problem(reason: "the parent of '\(last.prefix(60))' is neither an object nor an array")
            }
        }
    }

    private static func remove(at path: [String], in document: inout JSONValue) throws(Problem) -> JSONValue {
        guard let last = path.last else { throw Problem(reason: "cannot remove the whole document") }
        var removed: JSONValue = .null
        try change(Array(path.dropLast()), in: &document) { (parent: inout JSONValue) throws(Problem) in
            switch parent {
            case .object(var members):
                guard let value = members.removeValue(forKey: last) else { throw Problem(reason: "no member '\(last.prefix(60))'") }
                removed = value
                parent = .object(members)
            case .array(var items):
                removed = items.remove(at: try index(last, count: items.count, appending: false))
                parent = .array(items)
            default:
                throw Problem(reason: "the parent of '\(last.prefix(60))' is neither an object nor an array")
            }
        }
        return removed
    }

    /// Runs `body` on the value at `path`, in place.
    private static func change(
        _ path: [String], in document: inout JSONValue, _ body: (inout JSONValue) throws(Problem) -> Void
    ) throws(Problem) {
        guard let first = path.first else {
            try body(&document)
            return
        }
        let rest = Array(path.dropFirst())
        switch document {
        case .object(var members):
            guard var child = members[first] else { throw Problem(reason: "no member '\(first.prefix(60))'") }
            members[first] = nil  // the child is changed alone, not copied
            document = .null
            try change(rest, in: &child, body)
            members[first] = child
            document = .object(members)
        case .array(var items):
            let index = try index(first, count: items.count, appending: false)
            var child = items[index]
            items[index] = .null
            document = .null
            try change(rest, in: &child, body)
            items[index] = child
            document = .array(items)
        default:
            throw Problem(reason: "'\(first.prefix(60))' is inside neither an object nor an array")
        }
    }
}
