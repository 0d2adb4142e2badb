/// Checks on what callers send, each failure an `invalid_request` naming the field.
enum Validation {
    /// APNs tokens are hex; 32 bytes today, up to 100 allowed for future lengths.
    static func token(_ value: String, field: String) throws(ServiceError) -> String {
        let token = value.lowercased()
        guard (32...200).contains(token.utf8.count), token.utf8.count % 2 == 0,
              token.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else {
            throw ServiceError(.invalidRequest, "field '\(field)': must be an even number of hex digits, 32 to 200 long")
        }
        return token
    }

    /// Ids of matches and activities: 1 to 128 bytes of letters, digits and `._:-`.
    static func identifier(_ value: String, field: String) throws(ServiceError) {
        guard isIdentifier(value) else {
            throw ServiceError(.invalidRequest, "field '\(field)': must be 1 to 128 letters, digits or . _ : -")
        }
    }

    static func isIdentifier(_ value: String) -> Bool {
        (1...128).contains(value.utf8.count) && value.utf8.allSatisfy { byte in
            (48...57).contains(byte) || (65...90).contains(byte) || (97...122).contains(byte)
                || byte == 46 || byte == 95 || byte == 58 || byte == 45
        }
    }
}
