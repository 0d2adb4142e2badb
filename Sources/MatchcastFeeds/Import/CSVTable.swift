import Foundation
import MatchcastCore

/// A CSV file (RFC 4180: quoted fields may hold commas, newlines and doubled quotes; CRLF or LF)
/// read as a header and rows addressed by column name.
struct CSVTable {
    let header: [String]
    /// Data rows, each as long as the header; blank lines dropped.
    let rows: [[String]]

    init(_ data: Data) throws(InputError) {
        guard let text = String(data: data, encoding: .utf8) else {
            throw InputError(field: "", reason: "CSV is not UTF-8 text")
        }
        var table = Self.split(text)
        guard !table.isEmpty else { throw InputError(field: "", reason: "CSV has no header row") }
        header = table.removeFirst().map { $0.trimmingCharacters(in: .whitespaces) }
        var rows: [[String]] = []
        for (number, row) in table.enumerated() where row != [""] {
            guard row.count == header.count else {
                throw InputError(field: "row \(number + 1)", reason: "\(row.count) fields, the header has \(header.count)")
            }
            rows.append(row)
        }
        self.rows = rows
    }

    /// The index of column `name`.
    func column(_ name: String) throws(InputError) -> Int {
        guard let index = header.firstIndex(of: name) else {
            throw InputError(field: name, reason: "missing column")
        }
        return index
    }

    private static func split(_ text: String) -> [[String]] {
        var rows: [[String]] = []
        var row: [String] = []
        var field = ""
        var quoted = false
        var iterator = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar?
        while let scalar = pending ?? iterator.next() {
            pending = nil
            if quoted {
                if scalar == "\"" {
                    let next = iterator.next()
                    if next == "\"" { field.unicodeScalars.append("\"") } else { quoted = false; pending = next }
                } else {
                    field.unicodeScalars.append(scalar)
                }
                continue
            }
            switch scalar {
            case "\"": quoted = true
            case ",": row.append(field); field = ""
            case "\r": break
            case "\n": row.append(field); rows.append(row); row = []; field = ""
            default: field.unicodeScalars.append(scalar)
            }
        }
        if !field.isEmpty || !row.isEmpty {
            row.append(field)
            rows.append(row)
        }
        return rows
    }
}
