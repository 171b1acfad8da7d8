/// Naming rules for databases, scopes and collections.
package enum Names {
    package static let defaultScope = "_default"
    package static let defaultCollection = "_default"

    /// Database names appear in URLs and keyspaces (`db.scope.collection`), so
    /// they hold no dots or slashes: a letter or digit, then letters, digits
    /// and `_ - $ ( ) +`, at most 200 bytes.
    package static func validateDatabase(_ name: String) throws(StoreError) {
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-$()+".utf8)
        guard let first = name.utf8.first else { throw .invalidName(name, reason: "a database name cannot be empty") }
        guard name.utf8.count <= 200 else { throw .invalidName(name, reason: "a database name has at most 200 characters") }
        guard isAlphanumeric(first) else {
            throw .invalidName(name, reason: "a database name starts with a letter or a digit")
        }
        guard name.utf8.allSatisfy(allowed.contains) else {
            throw .invalidName(name, reason: "a database name holds only letters, digits and _ - $ ( ) +")
        }
    }

    /// Scope and collection names follow Couchbase's rules: 1-251 characters
    /// from `A-Z a-z 0-9 _ - %`, not starting with `_` or `%` (except `_default`).
    package static func validateCollectionOrScope(_ name: String, kind: String) throws(StoreError) {
        if name == "_default" { return }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-%".utf8)
        guard let first = name.utf8.first else { throw .invalidName(name, reason: "a \(kind) name cannot be empty") }
        guard name.utf8.count <= 251 else { throw .invalidName(name, reason: "a \(kind) name has at most 251 characters") }
        guard first != UInt8(ascii: "_"), first != UInt8(ascii: "%") else {
            throw .invalidName(name, reason: "a \(kind) name cannot start with '_' or '%' (only _default does)")
        }
        guard name.utf8.allSatisfy(allowed.contains) else {
            throw .invalidName(name, reason: "a \(kind) name holds only letters, digits and _ - %")
        }
    }

    /// Document IDs: 1-250 UTF-8 bytes, not starting with `_` (CouchDB reserves
    /// `_design/`, `_local/` and the rest), no control characters.
    static func validateDocumentID(_ id: String) throws(StoreError) {
        guard !id.isEmpty else { throw .invalidDocumentID(id, reason: "it is empty") }
        guard id.utf8.count <= 250 else { throw .invalidDocumentID(id, reason: "it is longer than 250 bytes") }
        guard !id.hasPrefix("_") else { throw .invalidDocumentID(id, reason: "IDs starting with '_' are reserved") }
        guard !id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw .invalidDocumentID(id, reason: "it contains control characters")
        }
    }

    private static func isAlphanumeric(_ c: UInt8) -> Bool {
        (c >= UInt8(ascii: "a") && c <= UInt8(ascii: "z")) || (c >= UInt8(ascii: "A") && c <= UInt8(ascii: "Z"))
            || (c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9"))
    }
}
