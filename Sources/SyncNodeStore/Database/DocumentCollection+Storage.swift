import Foundation
import GRDB

/// A body on its way into a row: a new revision's canonical bytes (bound as
/// they are, with no string made of them), or one read from the database.
enum PendingBody {
    case new(CanonicalBody)
    case stored(String)

    /// Steps `statement` once with the body bound at `index`, uncopied (see
    /// ``SQLiteStatement/stepOnce(bindingInPlace:at:)``), and resets it.
    func stepOnce(_ statement: SQLiteStatement, boundAt index: Int32) throws {
        switch self {
        case .new(let body): try body.bytes.withUnsafeBufferPointer { try statement.stepOnce(bindingInPlace: $0, at: index) }
        case .stored(var text): try text.withUTF8 { try statement.stepOnce(bindingInPlace: $0, at: index) }
        }
    }

    var holdsBlobs: Bool {
        switch self {
        case .new(let body): Blob.appears(in: body.bytes)
        case .stored(let text): Blob.appears(in: text)
        }
    }
}

/// The row ``DocumentCollection/document(id:)`` read last inside a batch, for the save that
/// usually follows (read, edit, save): that save's own read of the row is skipped. It holds
/// while the same write transaction (so the same, writer, connection) has taken no sequence in
/// the collection since, for every change to a document takes one before it touches the row.
/// Used once.
struct LastRowRead {
    let transaction: Int
    let lastSequence: Int64?
    let id: String
    let row: StoredRow
}

/// A document's row: the winning revision's body and the revision tree.
struct StoredRow {
    let key: Int64
    let rev: String
    let sequence: Int64
    let deleted: Bool
    let body: String
    let treeText: String

    func tree() throws -> RevisionTree { try RevisionTree(serialized: treeText) }
}

extension DocumentCollection {
    func loadRow(_ db: GRDB.Database, id: String) throws -> StoredRow? {
        if let kept = lastRowRead.withLock({ last -> StoredRow? in
            defer { last = nil }
            guard let kept = last, kept.id == id,
                  ThreadConnection.writer(for: database) === db, kept.transaction == database.sequences.transaction,
                  kept.lastSequence == database.sequences.last(collectionID: tableID) else { return nil }
            return kept.row
        }) {
            return kept
        }
        let s = try SQLiteStatement.cached(db, tables.selectRow)
        defer { s.reset() }
        s.bind(1, id)
        guard try s.step() else { return nil }
        return StoredRow(key: s.int64(0), rev: s.text(1), sequence: s.int64(2), deleted: s.int64(3) != 0, body: s.text(4), treeText: s.text(5))
    }

    /// Keeps `row`, just read inside the current write transaction, for the next ``loadRow(_:id:)``.
    func remember(_ row: StoredRow, id: String) {
        let kept = LastRowRead(
            transaction: database.sequences.transaction,
            lastSequence: database.sequences.last(collectionID: tableID), id: id, row: row)
        lastRowRead.withLock { $0 = kept }
    }

    /// Takes the next sequence number. The counter lives in the collections
    /// table, shared by every connection and process, and never goes back
    /// (not even after purges), so a peer's `since` never skips a change.
    func nextSequence(_ db: GRDB.Database) throws -> Int64 {
        try database.sequences.next(db, collectionID: tableID)
    }

    /// The sequence of the collection's latest change.
    package func lastSequence() throws -> Int64 {
        try checkLive()
        return try database.readStatement { db in try lastSequence(db) ?? 0 }
    }

    /// The sequence of the collection's latest change in `db`'s snapshot; nil when it has no row.
    /// Inside a write transaction it lags the rows until the commit writes it.
    func lastSequence(_ db: GRDB.Database) throws -> Int64? {
        try Int64.fetchOne(db.cachedStatement(sql: "SELECT last_seq FROM collections WHERE id = ?"), arguments: [tableID])
    }

    /// What an edit was based on, to tell whether the document changed since.
    enum EditBase {
        /// Read at this revision; nil for a new document.
        case revision(String?)
        /// Whatever is stored when the edit commits.
        case current
    }

    /// Saves (or deletes) a local edit as a child of the current winner.
    /// `onConflict` decides when the document changed since `base`: return
    /// true to save anyway, false to give up, or throw. `body` encodes the
    /// edit after it, so a conflict handler's edits are saved; it is given the current
    /// body (nil when there is none or it is deleted). Returns the new revision
    /// and sequence, or nil when `onConflict` gave up.
    func commitEdit(
        id: String, base: EditBase, deleting: Bool,
        body: (_ current: String?) throws -> CanonicalBody,
        onConflict: (Document?) throws -> Bool
    ) throws -> (rev: String, sequence: Int64)? {
        try checkLive()
        try Names.validateDocumentID(id)
        return try database.write { db in
            if case .revision(nil) = base, !deleting, !validatesLocalSaves,
               let saved = try insertFirstRevision(db, id: id, body: try body(nil)) {
                return saved
            }
            let current = try loadRow(db, id: id)
            if deleting, current == nil || current?.deleted == true {
                throw StoreError.notFound(.document, "document '\(id)' in \(fullName)")
            }
            if let current, case .revision(let read) = base, current.rev != read, !(read == nil && current.deleted) {
                let stored = current.deleted ? nil : Document(
                    id: id, revisionID: current.rev, sequence: current.sequence, isDeleted: false,
                    json: current.body, blobStore: database.blobStore)
                guard try onConflict(stored) else { return nil }
            }
            let currentBody = current?.deleted == false ? current?.body : nil
            return try commitChild(db, id: id, of: current, body: deleting ? try encodeBody([:]) : try body(currentBody), deleting: deleting, author: .local)
        }
    }

    /// ``commitEdit(id:base:deleting:body:onConflict:)`` for a document object, which learns its new revision.
    func commitEdit(_ document: MutableDocument, deleting: Bool, onConflict: (Document?) throws -> Bool) throws -> Bool {
        guard let (rev, sequence) = try commitEdit(
            id: document.id, base: .revision(document.revisionID), deleting: deleting,
            body: { _ in try encodeBody(document) }, onConflict: onConflict)
        else { return false }
        document.revisionID = rev
        document.sequence = sequence
        return true
    }

    /// Saves bodies prepared ahead (see ``CanonicalBody/parse(objectJSON:)``)
    /// as new revisions of their documents, last write wins, in one
    /// transaction. Returns the new revision IDs in order.
    package func saveBodies(_ documents: [(id: String, body: CanonicalBody)]) throws -> [String] {
        try checkLive()
        for (id, _) in documents { try Names.validateDocumentID(id) }
        return try database.write { db in
            try documents.map { id, body in
                try commitChild(db, id: id, of: try loadRow(db, id: id), body: body, deleting: false, author: .local).rev
            }
        }
    }

    /// CouchDB's edit rule (`new_edits=true`): `parentRev` must name a leaf
    /// of the document (usually the winner; a losing leaf to resolve a
    /// conflict); without one the document must be missing or deleted.
    /// - Throws: ``StoreError/conflict(documentID:)`` otherwise; ``StoreError/rejected(documentID:reason:)``
    ///   when the validator refuses it for `author`.
    @discardableResult
    package func putRevision(
        id: String, parentRev: String?, body: CanonicalBody, deleting: Bool, author: WriteAuthor = .local
    ) throws -> (rev: String, sequence: Int64) {
        try checkLive()
        try Names.validateDocumentID(id)
        return try database.write { db in
            let current = try loadRow(db, id: id)
            if let parentRev {
                guard let tree = try current?.tree(), let index = tree.index(of: parentRev), tree.isLeaf(index) else {
                    if current == nil { throw StoreError.notFound(.document, "document '\(id)' in \(fullName)") }
                    throw StoreError.conflict(documentID: id)
                }
                if deleting, tree.nodes[index].deleted { throw StoreError.notFound(.revision, "document '\(id)' (revision \(parentRev) is deleted)") }
            } else if let current, !current.deleted {
                throw StoreError.conflict(documentID: id)
            } else if deleting {
                throw StoreError.notFound(.document, "document '\(id)' in \(fullName)")
            }
            return try commitChild(db, id: id, of: current, parentRev: parentRev ?? current?.rev, body: body, deleting: deleting, author: author)
        }
    }

    /// Saves a new document's first revision without reading its row first: a save of a new
    /// document (a bulk load's every one) then runs one statement instead of two. Returns nil,
    /// having written nothing, when the ID is taken (by a live document or a tombstone): the
    /// caller then reads the row and goes the usual way. Only when no validator sees local
    /// saves, for it must be shown what the save replaces.
    private func insertFirstRevision(_ db: GRDB.Database, id: String, body: CanonicalBody) throws -> (rev: String, sequence: Int64)? {
        let rev = RevisionID.make(parent: nil, deleted: false, body: body)
        let sequence = try nextSequence(db)
        var tree = RevisionTree()
        tree.add(rev: rev, parent: nil, deleted: false, sequence: sequence)
        guard try persist(db, id: id, current: nil, tree: tree, newRev: rev, newBody: body, sequence: sequence, author: .local) else {
            database.sequences.giveBack(sequence, collectionID: tableID)
            return nil
        }
        return (rev, sequence)
    }

    /// Adds a local revision as a child of `parentRev` (default: the current winner).
    private func commitChild(
        _ db: GRDB.Database, id: String, of current: StoredRow?, parentRev: String? = nil, body: CanonicalBody, deleting: Bool,
        author: WriteAuthor
    ) throws -> (rev: String, sequence: Int64) {
        let parentRev = parentRev ?? current?.rev
        let rev = RevisionID.make(parent: parentRev, deleted: deleting, body: body)
        var tree = try current?.tree() ?? RevisionTree()
        if let current, tree.index(of: rev) != nil { return (rev, current.sequence) }
        try validate(id: id, rev: rev, deleted: deleting, body: body, replacing: current, author: author)
        let sequence = try nextSequence(db)
        tree.add(rev: rev, parent: parentRev.flatMap { tree.index(of: $0) }, deleted: deleting, sequence: sequence)
        guard try persist(db, id: id, current: current, tree: tree, newRev: rev, newBody: body, sequence: sequence, author: author) else {
            throw StoreError.storage("document '\(id)' has a row its save did not find")
        }
        return (rev, sequence)
    }

    /// Writes blob contents to the blob store and returns the canonical body.
    /// - Throws: ``StoreError/reservedProperty(_:)`` for a top-level key starting with `_` (but
    ///   `_attachments`); ``StoreError/invalidValue(_:)`` for `_attachments` that is not an object of blobs.
    func encodeBody(_ values: [String: DocumentValue]) throws -> CanonicalBody {
        for (key, value) in values where key.utf8.first == UInt8(ascii: "_") { try checkReserved(key, value) }
        var writer = JSONWriter()
        writer.writeObject(values)
        if writer.wroteBlob { for value in values.values { try storeBlobs(in: value) } }
        return CanonicalBody(json: writer.bytes)
    }

    /// ``encodeBody(_:)-([String:DocumentValue])`` for a document being edited, written from
    /// its slots directly: no copy of the document as values on every save.
    func encodeBody(_ document: MutableDictionary) throws -> CanonicalBody {
        for (key, slot) in document.storage where key.utf8.first == UInt8(ascii: "_") { try checkReserved(key, slot.snapshot) }
        var writer = JSONWriter()
        writer.writeObject(document.storage) { writer, slot in writer.write(slot) }
        if writer.wroteBlob { for slot in document.storage.values { try storeBlobs(in: slot) } }
        return CanonicalBody(json: writer.bytes)
    }

    /// A top-level `_` member of a body being saved: only `_attachments` may be one, the
    /// attachments a document brought from CouchDB or PouchDB, kept by name as blobs. An app
    /// that read such a document saves it again with them, or changes them as blobs.
    private func checkReserved(_ key: String, _ value: DocumentValue) throws {
        guard key == Self.attachmentsKey else { throw StoreError.reservedProperty(key) }
        guard case .dictionary(let attachments) = value, attachments.values.allSatisfy({ if case .blob = $0 { true } else { false } }) else {
            throw StoreError.invalidValue("_attachments must be an object of blobs (the document's attachments by name)")
        }
    }

    private func storeBlobs(in slot: MutableSlot) throws {
        switch slot {
        case .value(let value): try storeBlobs(in: value)
        case .stored: break  // made only of bodies without blobs (see LazyBody.slots)
        case .dictionary(let d): for s in d.storage.values { try storeBlobs(in: s) }
        case .array(let a): for s in a.storage { try storeBlobs(in: s) }
        }
    }

    private func storeBlobs(in value: DocumentValue) throws {
        switch value {
        case .blob(let blob): try database.blobStore.store(blob)
        case .array(let a): for v in a { try storeBlobs(in: v) }
        case .dictionary(let d): for v in d.values { try storeBlobs(in: v) }
        default: break
        }
    }

    /// Stores a document's new tree after adding the revision `newRev`:
    /// prunes history, puts the winner's body in the row and every other kept
    /// body in the revision-body table (the other leaves'; ancestors' too with
    /// ``DatabaseConfiguration/keepsAncestorBodies``), and records the change as `author`'s.
    /// Returns false, having written nothing, when `current` is nil but the ID has a row.
    func persist(
        _ db: GRDB.Database, id: String, current: StoredRow?, tree: RevisionTree,
        newRev: String, newBody: CanonicalBody, sequence: Int64, author: WriteAuthor
    ) throws -> Bool {
        var tree = tree
        let removed = tree.prune(revsLimit: database.revsLimit)
        guard let winner = tree.winner else { throw StoreError.storage("empty revision tree for '\(id)'") }
        let winnerRev = tree.nodes[winner].rev
        // At most two bodies at hand (the new one and the row's): a list, not a dictionary.
        var spare: [(rev: String, body: PendingBody)] = [(newRev, .new(newBody))]
        if let current, current.rev != newRev { spare.append((current.rev, .stored(current.body))) }
        let winnerBody: PendingBody
        if let taken = spare.firstIndex(where: { $0.rev == winnerRev }) {
            winnerBody = spare.remove(at: taken).body
        } else if let current, let body = try takeRevisionBody(db, key: current.key, rev: winnerRev) {
            winnerBody = .stored(body)
        } else {
            winnerBody = .stored("{}")
        }
        let s: SQLiteStatement
        if let current {
            s = try SQLiteStatement.cached(db, tables.updateRow)
            s.bind(6, current.key)
        } else {
            s = try SQLiteStatement.cached(db, tables.insertRow)
            s.bind(6, id)
        }
        defer { s.reset() }
        s.bind(1, winnerRev)
        s.bind(2, sequence)
        s.bind(3, tree.nodes[winner].deleted ? 1 : 0)
        s.bind(5, utf8: tree.serialized)
        try winnerBody.stepOnce(s, boundAt: 4)
        if current == nil, db.changesCount == 0 { return false }
        database.digests.record(collectionID: tableID, id: id, old: current.map { ($0.rev, $0.deleted) },
                                new: (winnerRev, tree.nodes[winner].deleted))
        let key = current?.key ?? db.lastInsertedRowID
        let keepsAncestors = database.config.keepsAncestorBodies
        for (rev, body) in spare {
            // An ancestor's blobs are kept by name: a peer that has it is sent them as stubs.
            guard let index = tree.index(of: rev), keepsAncestors || tree.isLeaf(index) || body.holdsBlobs else { continue }
            let keep = try SQLiteStatement.cached(db, tables.keepBody)
            defer { keep.reset() }
            keep.bind(1, key)
            keep.bind(2, rev)
            try body.stepOnce(keep, boundAt: 3)
        }
        // A losing leaf that got a child (an edit resolving a conflict) has its body in the table.
        var dropped = removed
        if !keepsAncestors, let current, let index = tree.index(of: newRev), let parent = tree.nodes[index].parent,
           tree.nodes[parent].rev != current.rev,
           let body = try revisionBody(db, key: current.key, rev: tree.nodes[parent].rev), !Blob.appears(in: body) {
            dropped.append(tree.nodes[parent].rev)
        }
        for rev in dropped {
            let drop = try SQLiteStatement.cached(db, tables.dropBody)
            defer { drop.reset() }
            drop.bind(1, key)
            drop.bind(2, rev)
            _ = try drop.step()
        }
        database.notifier.record(db, collectionID: tableID, change: ChangedDocument(
            id: id, revisionID: winnerRev, isDeleted: tree.nodes[winner].deleted,
            isConflicted: tree.hasConflict, origin: author.origin))
        return true
    }

    func revisionBody(_ db: GRDB.Database, key: Int64, rev: String) throws -> String? {
        try String.fetchOne(
            db.cachedStatement(sql: "SELECT body FROM \(tables.revs) WHERE doc_key = ? AND rev = ?"),
            arguments: [key, rev])
    }

    private func takeRevisionBody(_ db: GRDB.Database, key: Int64, rev: String) throws -> String? {
        let body = try revisionBody(db, key: key, rev: rev)
        try db.cachedStatement(sql: "DELETE FROM \(tables.revs) WHERE doc_key = ? AND rev = ?").execute(arguments: [key, rev])
        return body
    }

    /// Deletes a document's row and bodies; false when there was none.
    func purgeRow(_ db: GRDB.Database, id: String) throws -> Bool {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT key, rev, deleted FROM \(tables.docs) WHERE id = ?"), arguments: [id]) else {
            return false
        }
        let key: Int64 = row[0]
        try db.cachedStatement(sql: "DELETE FROM \(tables.revs) WHERE doc_key = ?").execute(arguments: [key])
        try db.cachedStatement(sql: "DELETE FROM \(tables.docs) WHERE key = ?").execute(arguments: [key])
        database.digests.record(collectionID: tableID, id: id, old: (row[1], row[2]), new: nil)
        // A purge takes a sequence too (as in CouchDB, update_seq moves): whatever was derived
        // from the collection at the last sequence, such as ``ChangeCounts``, is then stale.
        _ = try nextSequence(db)
        database.notifier.record(db, collectionID: tableID, change: .removed(id))
        return true
    }
}
