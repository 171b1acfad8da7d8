import Foundation
import GRDB

/// One entry of a changes feed: a document's latest change.
package struct ChangeEntry: Sendable, Equatable {
    package let sequence: Int64
    package let id: String
    /// The winning revision.
    package let rev: String
    package let deleted: Bool
    /// With `allLeaves`: every leaf revision, the winner first (CouchDB's `style=all_docs`).
    package let leafRevs: [String]
    /// With `includeBodies`: the winner's body as JSON.
    package let body: String?
}

/// A stored revision with its ancestry.
package struct StoredRevision: Sendable, Equatable {
    package let id: String
    package let rev: String
    package let deleted: Bool
    package let sequence: Int64
    /// The body as canonical JSON; nil when it was compacted away.
    package let body: String?
    /// Revision IDs from this one back to the oldest kept, newest first.
    package let history: [String]
}

/// What ``DocumentCollection/insertRevision(id:history:deleted:body:)`` did.
package enum RevisionInsertion: Sendable, Equatable {
    /// The revision was already there: nothing changed.
    case known
    /// Inserted; the document has a single leaf.
    case inserted
    /// Inserted; the document has several leaves (live or not).
    case branched
}

/// What a peer lacks of a document (CouchDB's `_revs_diff` entry).
package struct RevsDiffEntry: Sendable, Equatable {
    package let missing: [String]
    package let possibleAncestors: [String]
}

/// The operations the replicator and the listener build on: a changes feed,
/// revs-diff, fetching revisions with history, and inserting revisions made
/// elsewhere with their ancestry (CouchDB's `new_edits=false`).
extension DocumentCollection {
    /// The one reserved top-level property a stored body may hold: CouchDB
    /// attachments by name, each a blob metadata dictionary.
    package static let attachmentsKey = "_attachments"

    /// Documents changed after `since`, in sequence order, at most `limit`.
    package func changes(since: Int64, limit: Int? = nil, allLeaves: Bool = false, includeBodies: Bool = false) throws -> [ChangeEntry] {
        try checkLive()
        // Read raw, not through GRDB rows: a serving node reads every change of a pull here.
        return try database.readStatement { db in
            let s = try SQLiteStatement.cached(db, includeBodies ? tables.selectChangesWithBodies : tables.selectChanges)
            defer { s.reset() }
            s.bind(1, since)
            s.bind(2, Int64(limit ?? -1))
            return try Self.changeEntries(s, allLeaves: allLeaves, includeBodies: includeBodies)
        }
    }

    /// The rows of a changes statement: `id, rev, seq, deleted, tree` and, with `includeBodies`, `body`.
    static func changeEntries(_ s: SQLiteStatement, allLeaves: Bool, includeBodies: Bool) throws -> [ChangeEntry] {
        var out: [ChangeEntry] = []
        while try s.step() {
            let rev = s.text(1)
            var leaves = [rev]
            // A tree of one revision (one line) has it as its only leaf, and it is `rev`.
            if allLeaves, s.contains(0x0A, inColumn: 4) {
                let tree = try RevisionTree(serialized: s.text(4))
                leaves += tree.leaves.map { tree.nodes[$0].rev }.filter { $0 != rev }
            }
            out.append(ChangeEntry(
                sequence: s.int64(2), id: s.text(0), rev: rev, deleted: s.int64(3) != 0, leafRevs: leaves,
                body: includeBodies ? s.text(5) : nil))
        }
        return out
    }

    /// How many tombstones the collection keeps (CouchDB's `doc_del_count`).
    package func deletedCount() throws -> Int {
        try checkLive()
        return try database.readStatement { db in
            try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM \(tables.docs) WHERE deleted = 1")) ?? 0
        }
    }

    /// How many documents changed after `since` (CouchDB's `pending`). Asked again with a later
    /// `since` and nothing written meanwhile, it counts only the rows in between (``ChangeCounts``).
    package func changeCount(since: Int64) throws -> Int {
        try checkLive()
        // Inside a write transaction the counter row lags the rows (it is written at commit).
        let followsEarlierCounts = !ThreadConnection.isWriting(database)
        return try database.read { db in
            let lastSequence = try self.lastSequence(db) ?? 0
            let count: Int
            if followsEarlierCounts, let base = changeCounts.base(lastSequence: lastSequence, since: since) {
                let passed = try Int.fetchOne(
                    db.cachedStatement(sql: "SELECT count(*) FROM \(tables.docs) WHERE seq > ? AND seq <= ?"),
                    arguments: [base.since, since]) ?? 0
                count = base.count - passed
            } else {
                count = try Int.fetchOne(db.cachedStatement(sql: "SELECT count(*) FROM \(tables.docs) WHERE seq > ?"), arguments: [since]) ?? 0
            }
            if followsEarlierCounts { changeCounts.remember(.init(lastSequence: lastSequence, since: since, count: count)) }
            return count
        }
    }

    /// For each document, the revisions in `revs` this collection lacks, with
    /// the known leaves of lower generation as possible ancestors. Documents
    /// with nothing missing are left out.
    package func revsDiff(_ revs: [String: [String]]) throws -> [String: RevsDiffEntry] {
        try checkLive()
        return try database.read { db in
            // One statement for the whole batch: SQLite looks each ID up; only known ones come back.
            var ids = JSONWriter(capacity: revs.count * 24)
            ids.writeRaw("[")
            for (i, id) in revs.keys.enumerated() {
                if i > 0 { ids.writeRaw(",") }
                ids.writeString(id)
            }
            ids.writeRaw("]")
            let s = try SQLiteStatement.cached(db, tables.selectTrees)
            defer { s.reset() }
            s.bind(1, utf8: ids.bytes)
            var trees: [String: String] = [:]
            while try s.step() { trees[s.text(0)] = s.text(1) }
            var out = [String: RevsDiffEntry](minimumCapacity: revs.count)
            for (id, candidates) in revs {
                guard let known = trees[id] else {
                    // Unknown here (what a first pull asks about): every revision is missing.
                    if !candidates.isEmpty { out[id] = RevsDiffEntry(missing: candidates.count == 1 ? candidates : Array(Set(candidates)).sorted(), possibleAncestors: []) }
                    continue
                }
                let tree = try RevisionTree(serialized: known)
                let missing = candidates.filter { tree.index(of: $0) == nil }
                guard !missing.isEmpty else { continue }
                let maxGen = missing.compactMap(RevisionID.generation(of:)).max() ?? 0
                let ancestors = tree.leaves.map { tree.nodes[$0].rev }.filter { (RevisionID.generation(of: $0) ?? 0) < maxGen }.sorted()
                out[id] = RevsDiffEntry(missing: Array(Set(missing)).sorted(), possibleAncestors: ancestors)
            }
            return out
        }
    }

    /// A revision of a document (nil `rev`: the winner), with its history;
    /// nil when the document or revision is unknown.
    package func revision(id: String, rev: String? = nil, historyLimit: Int = .max) throws -> StoredRevision? {
        try checkLive()
        return try database.read { db in
            guard let row = try loadRow(db, id: id) else { return nil }
            let tree = try row.tree()
            guard let index = tree.index(of: rev ?? row.rev) else { return nil }
            return try storedRevision(db, id: id, row: row, tree: tree, index: index, historyLimit: historyLimit)
        }
    }

    /// Runs `body` in one read transaction: the reads it makes see one
    /// snapshot and share one lock, instead of one transaction each.
    package func inSnapshot<T>(_ body: () throws -> T) throws -> T {
        try checkLive()
        return try database.read { _ in try body() }
    }

    /// Every leaf revision of a document (CouchDB's `open_revs=all`), winner first.
    package func leafRevisions(id: String, historyLimit: Int = .max) throws -> [StoredRevision] {
        try checkLive()
        return try database.read { db in
            guard let row = try loadRow(db, id: id) else { return [] }
            let tree = try row.tree()
            let leaves = tree.leaves.sorted { a, b in
                RevisionID.wins((tree.nodes[a].rev, tree.nodes[a].deleted), over: (tree.nodes[b].rev, tree.nodes[b].deleted))
            }
            return try leaves.map { try storedRevision(db, id: id, row: row, tree: tree, index: $0, historyLimit: historyLimit) }
        }
    }

    /// The live leaves that lost to the winner: the document's conflicts.
    package func conflictingRevisions(id: String) throws -> [String] {
        try streamedLeaves(id: id, readingAtMost: -1).dropFirst().filter { !$0.deleted }.map(\.rev)
    }

    private func storedRevision(
        _ db: GRDB.Database, id: String, row: StoredRow, tree: RevisionTree, index: Int, historyLimit: Int
    ) throws -> StoredRevision {
        let node = tree.nodes[index]
        let body = node.rev == row.rev ? row.body : try revisionBody(db, key: row.key, rev: node.rev)
        return StoredRevision(
            id: id, rev: node.rev, deleted: node.deleted, sequence: node.sequence, body: body,
            history: tree.history(from: index, limit: historyLimit))
    }

    /// Inserts a revision made elsewhere, with its history (newest first),
    /// grafting it into the tree without renumbering: a new branch when it
    /// does not extend a leaf. Returns what happened: nothing when the revision
    /// was already known; else whether the tree now has more than one leaf (a
    /// possible conflict, which is all the replicator needs to look at).
    ///
    /// Blob contents the body refers to must already be in the blob store.
    @discardableResult
    package func insertRevision(
        id: String, history: [String], deleted: Bool, body: [String: DocumentValue], author: WriteAuthor = .local
    ) throws -> RevisionInsertion {
        for key in body.keys where key.hasPrefix("_") && key != Self.attachmentsKey { throw StoreError.reservedProperty(key) }
        return try insertRevision(id: id, history: history, deleted: deleted, body: CanonicalBody(object: body), author: author)
    }

    /// ``insertRevision(id:history:deleted:body:)`` for a body already in
    /// canonical form (replication canonicalizes wire text without a value tree).
    @discardableResult
    package func insertRevision(
        id: String, history: [String], deleted: Bool, body: CanonicalBody, author: WriteAuthor = .local
    ) throws -> RevisionInsertion {
        try checkLive()
        try Names.validateDocumentID(id)
        guard let newest = history.first else { throw StoreError.invalidRevision("empty history for '\(id)'") }
        var expected = try RevisionID.validate(newest)
        for rev in history.dropFirst() {
            expected -= 1
            guard try RevisionID.validate(rev) == expected else {
                throw StoreError.invalidRevision("history of '\(id)' skips a generation at '\(rev)'")
            }
        }
        return try database.write { db in
            let current = try loadRow(db, id: id)
            var tree = try current?.tree() ?? RevisionTree()
            guard tree.index(of: newest) == nil else { return .known }
            try validate(id: id, rev: newest, deleted: deleted, body: body, replacing: current, author: author)
            let sequence = try nextSequence(db)
            guard tree.graft(history: history, deleted: deleted, sequence: sequence) != nil else { return .known }
            guard try persist(db, id: id, current: current, tree: tree, newRev: newest, newBody: body, sequence: sequence, author: author) else {
                throw StoreError.storage("document '\(id)' has a row its replicated revision did not find")
            }
            return tree.leaves.count > 1 ? .branched : .inserted
        }
    }

    /// Stores blob content received from a peer; returns its digest. `md5`, when given, is the
    /// content's `md5-` digest already checked (not computed again).
    @discardableResult
    package func storeBlobContent(_ data: Data, md5: String? = nil) throws -> String {
        try database.blobStore.store(data: data, md5: md5)
    }

    /// The `md5-` digest of a blob's content (the digest peers exchange), when this database has the content.
    package func blobMD5(digest: String) -> String? {
        database.blobStore.md5(digest: digest)
    }

    /// The content of a blob by digest, when this database has it.
    package func blobContent(digest: String) -> Data? {
        database.blobStore.content(digest: digest)
    }

    /// The file holding a blob's content, when this database has it (to stream it).
    package func blobFile(digest: String) -> URL? {
        database.blobStore.fileURL(digest: digest)
    }

    /// The file holding a blob's content and its length, when this database has it.
    package func blobFileAndLength(digest: String) -> (url: URL, length: Int)? {
        database.blobStore.file(digest: digest)
    }

    /// A batch for blobs that documents about to be saved refer to (see ``BlobBatch``).
    package func blobBatch() throws -> BlobBatch {
        try checkLive()
        return BlobBatch(store: database.blobStore)
    }

    /// A writer of blob content arriving piece by piece (see ``BlobWriter``).
    /// - Throws: ``StoreError/io(_:)`` when the temporary file cannot be created.
    package func blobWriter() throws -> BlobWriter {
        try checkLive()
        return try BlobWriter(store: database.blobStore)
    }
}

extension DocumentCollection {
    /// Documents in ID order (byte order), starting after `afterID`, at most
    /// `limit`; tombstones only when `includeDeleted`.
    package func documents(afterID: String?, limit: Int, includeDeleted: Bool = false) throws -> [Document] {
        try checkLive()
        let deletedFilter = includeDeleted ? "" : "AND deleted = 0"
        return try database.readStatement { db in
            let statement = try db.cachedStatement(sql: """
                SELECT id, rev, seq, deleted, body FROM \(tables.docs) WHERE id > ? \(deletedFilter) ORDER BY id LIMIT ?
                """)
            return try Row.fetchAll(statement, arguments: [afterID ?? "", limit]).map { row in
                Document(id: row[0], revisionID: row[1], sequence: row[2], isDeleted: row[3], json: row[4], blobStore: database.blobStore)
            }
        }
    }
}

extension DocumentCollection {
    /// Live documents by ID range (CouchDB's `_all_docs`): IDs from `start`
    /// to `end` (both optional; `end` included unless `inclusiveEnd` is
    /// false), ascending or descending, after skipping `skip`, at most `limit`.
    package func documents(
        from start: String?, to end: String?, inclusiveEnd: Bool = true, descending: Bool = false,
        skip: Int = 0, limit: Int? = nil
    ) throws -> [Document] {
        try checkLive()
        var conditions = ["deleted = 0"]
        var arguments: [String] = []
        let (low, high) = descending ? (end, start) : (start, end)
        let lowInclusive = descending ? inclusiveEnd : true
        let highInclusive = descending ? true : inclusiveEnd
        if let low { conditions.append(lowInclusive ? "id >= ?" : "id > ?"); arguments.append(low) }
        if let high { conditions.append(highInclusive ? "id <= ?" : "id < ?"); arguments.append(high) }
        let sql = """
            SELECT id, rev, seq, deleted, body FROM \(tables.docs) WHERE \(conditions.joined(separator: " AND "))
            ORDER BY id \(descending ? "DESC" : "ASC") LIMIT \(limit ?? -1) OFFSET \(max(0, skip))
            """
        return try database.readStatement { db in
            try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map { row in
                Document(id: row[0], revisionID: row[1], sequence: row[2], isDeleted: row[3], json: row[4], blobStore: database.blobStore)
            }
        }
    }
}
