import Foundation
import GRDB
import GRDBSQLite

/// A revision's body as an answer streamed to a client reads it: a small one
/// at once, a large one only measured, so that memory can be set aside for it
/// before it is read.
package enum RevisionBody: Sendable, Equatable {
    /// The whole body, canonical JSON.
    case text(String)
    /// A body larger than the reader asked for, not read: its size in bytes.
    case large(Int)
}

/// A revision with its history, its body read only when small enough (see
/// ``DocumentCollection/streamedRevision(id:rev:historyLimit:readingAtMost:)``).
package struct StreamedRevision: Sendable {
    package let id: String
    package let rev: String
    package let deleted: Bool
    package let sequence: Int64
    /// Nil when the body was compacted away.
    package let body: RevisionBody?
    /// Revision IDs from this one back to the oldest kept, newest first.
    package let history: [String]

    /// The revision with `body` (this one's, read whole).
    package func stored(body: String?) -> StoredRevision {
        StoredRevision(id: id, rev: rev, deleted: deleted, sequence: sequence, body: body, history: history)
    }

    /// Bytes of its body read so far (none when large or compacted).
    package var bytesRead: Int {
        if case .text(let text)? = body { return text.utf8.count }
        return 0
    }
}

/// Reads for answers that are written to a client as they are read (`_all_docs`,
/// `_changes`, `_bulk_get`, `_find`, `open_revs`): none of them loads a body it
/// was not asked for, and each reads a body straight from its row in one copy
/// (SQLite's incremental blob I/O), learning its size before reading it. A
/// column read would first copy the whole value inside SQLite, then again into
/// a string: twice a 50 MB document's size for a moment.
extension DocumentCollection {
    /// The body of revision `rev` of document `id` (the winner or a kept
    /// ancestor or conflict), or only its size when that is over `maxSize`;
    /// nil when the document or revision is unknown, or its body was compacted.
    package func body(id: String, rev: String, readingAtMost maxSize: Int = .max) throws -> RevisionBody? {
        try checkLive()
        return try database.read { db in
            let s = try SQLiteStatement.cached(db, tables.selectTree)
            defer { s.reset() }
            s.bind(1, id)
            guard try s.step() else { return nil }
            return try body(db, key: s.int64(0), winner: s.text(1), rev: rev, maxSize: maxSize)
        }
    }

    /// A revision (nil `rev`: the winner) with its history, its body read when
    /// at most `maxSize` bytes (a negative `maxSize`: not looked at, nil); nil
    /// when the document or revision is unknown.
    package func streamedRevision(id: String, rev: String? = nil, historyLimit: Int = .max, readingAtMost maxSize: Int) throws -> StreamedRevision? {
        try streamedRevisions(id: id, historyLimit: historyLimit, maxSize: maxSize) { tree, winner in
            tree.index(of: rev ?? winner).map { [$0] } ?? []
        }.first
    }

    /// Every leaf revision of a document (CouchDB's `open_revs=all`), winner
    /// first, each body read when at most `maxSize` bytes.
    package func streamedLeaves(id: String, historyLimit: Int = .max, readingAtMost maxSize: Int) throws -> [StreamedRevision] {
        try streamedRevisions(id: id, historyLimit: historyLimit, maxSize: maxSize) { tree, _ in
            tree.leaves.sorted { a, b in
                RevisionID.wins((tree.nodes[a].rev, tree.nodes[a].deleted), over: (tree.nodes[b].rev, tree.nodes[b].deleted))
            }
        }
    }

    /// Live documents' IDs and winning revisions in ID order (CouchDB's
    /// `_all_docs` without bodies), as ``documents(from:to:inclusiveEnd:descending:skip:limit:)``
    /// selects them, starting after `after` when given (the last ID of the previous page).
    package func liveRevisions(
        from start: String?, to end: String?, inclusiveEnd: Bool = true, descending: Bool = false,
        after: String? = nil, skip: Int = 0, limit: Int
    ) throws -> [(id: String, rev: String)] {
        try checkLive()
        var conditions = ["deleted = 0"]
        var arguments: [String] = []
        let (low, high) = descending ? (end, start) : (start, end)
        if let low { conditions.append(descending && !inclusiveEnd ? "id > ?" : "id >= ?"); arguments.append(low) }
        if let high { conditions.append(!descending && !inclusiveEnd ? "id < ?" : "id <= ?"); arguments.append(high) }
        if let after { conditions.append(descending ? "id < ?" : "id > ?"); arguments.append(after) }
        let sql = """
            SELECT id, rev FROM \(tables.docs) WHERE \(conditions.joined(separator: " AND "))
            ORDER BY id \(descending ? "DESC" : "ASC") LIMIT \(max(0, limit)) OFFSET \(max(0, skip))
            """
        return try database.readStatement { db in
            try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { ($0[0], $0[1]) }
        }
    }

    private func streamedRevisions(
        id: String, historyLimit: Int, maxSize: Int, pick: (RevisionTree, String) -> [Int]
    ) throws -> [StreamedRevision] {
        try checkLive()
        return try database.read { db in
            let s = try SQLiteStatement.cached(db, tables.selectTree)
            defer { s.reset() }
            s.bind(1, id)
            guard try s.step() else { return [] }
            let (key, winner, tree) = (s.int64(0), s.text(1), try RevisionTree(serialized: s.text(2)))
            return try pick(tree, winner).map { index in
                let node = tree.nodes[index]
                return StreamedRevision(
                    id: id, rev: node.rev, deleted: node.deleted, sequence: node.sequence,
                    body: maxSize < 0 ? nil : try body(db, key: key, winner: winner, rev: node.rev, maxSize: maxSize),
                    history: tree.history(from: index, limit: historyLimit))
            }
        }
    }

    private func body(_ db: GRDB.Database, key: Int64, winner: String, rev: String, maxSize: Int) throws -> RevisionBody? {
        if rev == winner { return try Self.readBody(db, table: tables.docs, rowid: key, maxSize: maxSize) }
        guard let rowid = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT rowid FROM \(tables.revs) WHERE doc_key = ? AND rev = ?"), arguments: [key, rev])
        else { return nil }
        return try Self.readBody(db, table: tables.revs, rowid: rowid, maxSize: maxSize)
    }

    /// The `body` column of a row, measured from the row's header and read in one copy.
    private static func readBody(_ db: GRDB.Database, table: String, rowid: Int64, maxSize: Int) throws -> RevisionBody {
        var blob: OpaquePointer?
        guard sqlite3_blob_open(db.sqliteConnection, "main", table, "body", rowid, 0, &blob) == SQLITE_OK, let blob else {
            let (code, message) = (sqlite3_extended_errcode(db.sqliteConnection), String(cString: sqlite3_errmsg(db.sqliteConnection)))
            sqlite3_blob_close(blob)
            throw StoreError.sqlite(code: code, message: "cannot open a document body: \(message)")
        }
        defer { sqlite3_blob_close(blob) }
        let size = Int(sqlite3_blob_bytes(blob))
        guard size <= maxSize else { return .large(size) }
        var status = SQLITE_OK
        let text = String(unsafeUninitializedCapacity: size) { buffer in
            guard let base = buffer.baseAddress, size > 0 else { return 0 }
            status = sqlite3_blob_read(blob, base, Int32(size), 0)
            return status == SQLITE_OK ? size : 0
        }
        guard status == SQLITE_OK else {
            throw StoreError.sqlite(code: sqlite3_extended_errcode(db.sqliteConnection), message: "cannot read a document body: \(String(cString: sqlite3_errmsg(db.sqliteConnection)))")
        }
        return .text(text)
    }
}
