import Foundation
import GRDB

/// A `_local` document: not replicated, no revision tree, revision `0-N`.
package struct LocalDocument: Sendable, Equatable {
    package let id: String
    package let rev: String
    /// The JSON object as it was stored.
    package let body: String
    /// Who wrote it, as the layer above named them (a peer's principal); nil for this node's own.
    package var writer: String? = nil
    /// When it was last written; nil when written before the store kept it.
    package var writtenAt: Date? = nil
}

/// Local documents hold replication checkpoints. Each replicator reads its
/// own format, so bodies are stored verbatim.
extension DocumentCollection {
    package func localDocument(id: String) throws -> LocalDocument? {
        try checkLive()
        return try database.readStatement { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT generation, body FROM \(tables.local) WHERE id = ?", arguments: [id]) else {
                return nil
            }
            let generation: Int64 = row[0]
            return LocalDocument(id: id, rev: "0-\(generation)", body: row[1])
        }
    }

    /// `0-N`, as this store writes a local document's revisions (a replicator may send any
    /// revision of the usual form too).
    private static func isLocalRevision(_ rev: String) -> Bool {
        let digits = rev.utf8.dropFirst(2)
        return rev.hasPrefix("0-") && (1...18).contains(digits.count) && digits.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
    }

    /// Every local document, with who wrote it and when.
    package func localDocuments() throws -> [LocalDocument] {
        try checkLive()
        return try database.readStatement { db in
            try Row.fetchAll(db, sql: "SELECT id, generation, body, writer, written_at FROM \(tables.local)").map { row in
                let generation: Int64 = row[1], at: Double? = row[4]
                return LocalDocument(id: row[0], rev: "0-\(generation)", body: row[2], writer: row[3], writtenAt: at.map(Date.init(timeIntervalSince1970:)))
            }
        }
    }

    /// Creates or replaces a local document. `rev`, when given, must be the
    /// current one; without it the document must not exist (CouchDB's rule),
    /// unless `force` is set. `writer` names who wrote it (nil: this node).
    @discardableResult
    package func putLocalDocument(id: String, json: String, rev: String?, force: Bool = false, writer: String? = nil) throws -> LocalDocument {
        try checkLive()
        guard !id.isEmpty, id.utf8.count <= 250 else { throw StoreError.invalidDocumentID(id, reason: "local IDs are 1-250 bytes") }
        guard !id.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
            throw StoreError.invalidDocumentID(id, reason: "a local ID holds no control characters")
        }
        if let rev, !Self.isLocalRevision(rev) { _ = try RevisionID.validate(rev) }
        _ = try JSONParser.parseObject(json)
        let now = Date()
        return try database.write { db in
            let current = try Int64.fetchOne(db, sql: "SELECT generation FROM \(tables.local) WHERE id = ?", arguments: [id])
            if !force, current.map({ "0-\($0)" }) != rev, !(current == nil && rev == nil) {
                throw StoreError.conflict(documentID: "_local/\(id)")
            }
            let generation = (current ?? 0) + 1
            try db.execute(
                sql: "INSERT OR REPLACE INTO \(tables.local)(id, generation, body, writer, written_at) VALUES(?, ?, ?, ?, ?)",
                arguments: [id, generation, json, writer, now.timeIntervalSince1970])
            return LocalDocument(id: id, rev: "0-\(generation)", body: json, writer: writer, writtenAt: now)
        }
    }

    package func deleteLocalDocument(id: String, rev: String?) throws {
        try checkLive()
        try database.write { db in
            guard let current = try Int64.fetchOne(db, sql: "SELECT generation FROM \(tables.local) WHERE id = ?", arguments: [id]) else {
                throw StoreError.notFound(.localDocument, "_local/\(id)")
            }
            if let rev, rev != "0-\(current)" { throw StoreError.conflict(documentID: "_local/\(id)") }
            try db.execute(sql: "DELETE FROM \(tables.local) WHERE id = ?", arguments: [id])
        }
    }
}
