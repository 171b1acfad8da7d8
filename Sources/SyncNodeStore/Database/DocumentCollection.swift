import Dispatch
import Foundation
import GRDB
import GRDBSQLite
import Synchronization

/// A set of documents with unique IDs and its own change sequence, inside a
/// scope of a database. Get one from ``Database/defaultCollection()``,
/// ``Database/createCollection(name:scope:)`` or ``Database/collection(name:scope:)``.
///
/// (Named `DocumentCollection` so that it never shadows Swift's `Collection`.)
public final class DocumentCollection: Sendable, Hashable, CustomStringConvertible {
    /// The collection's name.
    public let name: String
    /// The name of its scope.
    public let scopeName: String
    /// The database it belongs to.
    public let database: Database
    let tables: CollectionTables
    var tableID: Int64 { tables.id }
    private let isDeleted = Mutex(false)
    let validatorSlot = Mutex<DocumentValidator?>(nil)
    /// Recent `changeCount(since:)` answers, which later pages' counts follow from.
    let changeCounts = ChangeCounts()
    /// The digest as last read (``digest()``).
    let digestMemo = DigestMemo()
    /// The row ``document(id:)`` last read inside a batch (see ``LastRowRead``).
    let lastRowRead = Mutex<LastRowRead?>(nil)

    init(database: Database, scope: String, name: String, tableID: Int64) {
        self.database = database
        self.scopeName = scope
        self.name = name
        self.tables = CollectionTables(id: tableID)
    }

    /// Its scope.
    public var scope: Scope { Scope(name: scopeName, database: database) }

    /// `scope.collection`.
    public var fullName: String { "\(scopeName).\(name)" }
    /// `scope.name`.
    public var description: String { fullName }

    /// The same collection object (a database hands out one per collection).
    public static func == (a: DocumentCollection, b: DocumentCollection) -> Bool { a === b }
    /// Hashes the object's identity, as `==` compares it.
    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }

    func markDeleted() { isDeleted.withLock { $0 = true } }

    func checkLive() throws {
        if isDeleted.withLock({ $0 }) { throw StoreError.collectionDeleted(fullName) }
    }

    // MARK: - Reading

    /// The number of documents, deleted ones not counted.
    /// - Throws: ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public var count: Int {
        get throws {
            try checkLive()
            return try database.readStatement { db in
                // All rows (through the small sequence index) less the tombstones (a partial index):
                // a `WHERE deleted = 0` count would read every body.
                try Int.fetchOne(db.cachedStatement(sql: """
                    SELECT (SELECT count(*) FROM \(tables.docs)) - (SELECT count(*) FROM \(tables.docs) WHERE deleted = 1)
                    """)) ?? 0
            }
        }
    }

    /// The document's current revision, or nil when it does not exist or was deleted.
    ///
    /// Inside ``Database/inBatch(_:)`` it sees the batch's own uncommitted writes.
    /// - Throws: ``StoreError/collectionDeleted(_:)``; ``StoreError/databaseClosed(_:)``;
    ///   ``StoreError/storage(_:)`` when SQLite fails.
    public func document(id: String) throws -> Document? {
        try checkLive()
        let sql = tables.selectDocument
        let read = { (s: SQLiteStatement) throws -> Document? in
            s.bind(1, id)
            guard try s.step(), s.int64(2) == 0 else { return nil }
            return Document(id: id, revisionID: s.text(0), sequence: s.int64(1), isDeleted: false, json: s.text(3), blobStore: self.database.blobStore)
        }
        if let db = ThreadConnection.writer(for: database) {
            // Inside a batch: read through the writer to see the batch's own writes, and keep the
            // row for the save that usually follows.
            return try database.mappingErrors {
                guard let row = try loadRow(db, id: id) else { return nil }
                remember(row, id: id)
                return row.deleted ? nil : Document(
                    id: id, revisionID: row.rev, sequence: row.sequence, isDeleted: false, json: row.body, blobStore: database.blobStore)
            }
        }
        try database.checkOpen()
        return try database.pointReader.withStatement(sql, read)
    }

    // MARK: - Saving

    /// Saves the document; if it changed since it was read, this save wins
    /// (last write wins). On success `document` learns its new revision and sequence.
    /// - Throws: ``StoreError/invalidDocumentID(_:reason:)`` for an empty, over-long, control-character or
    ///   `_`-prefixed ID; ``StoreError/reservedProperty(_:)`` for a top-level key starting with `_`;
    ///   ``StoreError/rejected(documentID:reason:)`` when the validator refuses it (see
    ///   ``setValidator(_:)``); ``StoreError/io(_:)`` or ``StoreError/notFound(_:_:)``
    ///   (``StoreError/Subject/blob``) when a blob's content cannot be stored;
    ///   ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    public func save(_ document: MutableDocument) throws {
        try save(document, concurrencyControl: .lastWriteWins)
    }

    /// Saves the document with the given conflict policy.
    /// - Throws: ``StoreError/conflict(documentID:)`` with `.failOnConflict`
    ///   when the document changed since `document` was read (or, for a new document, when a live one
    ///   with its ID exists); otherwise the errors of ``save(_:)``.
    public func save(_ document: MutableDocument, concurrencyControl: ConcurrencyControl) throws {
        _ = try commitEdit(document, deleting: false) { _ in try concurrencyControl.overwrites(documentID: document.id) }
    }

    /// Saves the document; on conflict, calls `conflictHandler` with the
    /// document being saved (which it may edit) and the stored one (nil if it
    /// was deleted). Returns false, saving nothing, when the handler returns false.
    ///
    /// The handler runs inside the write transaction, holding up other writers: keep it short.
    /// - Throws: whatever `conflictHandler` throws (nothing is saved); otherwise the errors of ``save(_:)``.
    @discardableResult
    public func save(_ document: MutableDocument, conflictHandler: (MutableDocument, Document?) throws -> Bool) throws -> Bool {
        try commitEdit(document, deleting: false) { current in try conflictHandler(document, current) }
    }

    /// Deletes the document, leaving a tombstone that replicates the deletion.
    /// - Throws: ``StoreError/notFound(_:_:)`` (``StoreError/Subject/document``) when it does not exist or
    ///   is deleted already; ``StoreError/rejected(documentID:reason:)`` when the validator refuses it;
    ///   ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    public func delete(_ document: Document) throws {
        try delete(document, concurrencyControl: .lastWriteWins)
    }

    /// Deletes the document with the given conflict policy.
    /// - Throws: ``StoreError/conflict(documentID:)`` with `.failOnConflict` when the document changed
    ///   since `document` was read; otherwise the errors of ``delete(_:)``.
    public func delete(_ document: Document, concurrencyControl: ConcurrencyControl) throws {
        let edit = document.toMutable()
        _ = try commitEdit(edit, deleting: true) { _ in try concurrencyControl.overwrites(documentID: document.id) }
    }

    /// Deletes the document with this ID (last write wins).
    /// - Throws: the errors of ``delete(_:)``: ``StoreError/notFound(_:_:)`` when there is no live
    ///   document with this ID.
    public func delete(id: String) throws {
        guard let document = try document(id: id) else { throw StoreError.notFound(.document, "document '\(id)' in \(fullName)") }
        try delete(document)
    }

    /// Removes every trace of the document: no tombstone, nothing replicates.
    ///
    /// A deleted document (a tombstone) can be purged too.
    /// - Throws: ``StoreError/notFound(_:_:)`` (``StoreError/Subject/document``) when there is no such
    ///   document; ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public func purge(id: String) throws {
        try checkLive()
        try database.write { db in
            guard try purgeRow(db, id: id) else { throw StoreError.notFound(.document, "document '\(id)' in \(fullName)") }
        }
    }

    /// Removes every trace of the document.
    /// - Throws: the errors of ``purge(id:)``.
    public func purge(_ document: Document) throws { try purge(id: document.id) }

    /// Purges the document if every one of its leaf revisions is among `revisions`, checked and
    /// done in one transaction (CouchDB's `_purge`: a leaf written meanwhile keeps it); returns
    /// the leaves purged, empty when it was kept or does not exist.
    /// - Throws: ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    package func purge(id: String, ifLeavesAmong revisions: Set<String>) throws -> [String] {
        try checkLive()
        return try database.write { db in
            guard let row = try loadRow(db, id: id) else { return [] }
            let tree = try row.tree()
            let leaves = tree.leaves.map { tree.nodes[$0].rev }
            guard leaves.allSatisfy(revisions.contains), try purgeRow(db, id: id) else { return [] }
            return leaves.sorted()
        }
    }

    // MARK: - Expiration

    /// Sets when the document is purged automatically; nil clears it.
    /// - Throws: ``StoreError/notFound(_:_:)`` (``StoreError/Subject/document``) when there is no such
    ///   document (a tombstone counts as one); ``StoreError/collectionDeleted(_:)``,
    ///   ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    public func setDocumentExpiration(id: String, expiration: Date?) throws {
        try checkLive()
        try database.write { db in
            try db.execute(
                sql: "UPDATE \(tables.docs) SET expiration = ? WHERE id = ?",
                arguments: [expiration?.timeIntervalSince1970, id])
            guard db.changesCount > 0 else { throw StoreError.notFound(.document, "document '\(id)' in \(fullName)") }
        }
        database.expiry.reschedule()
    }

    /// When the document expires; nil when no expiration is set or there is no such document.
    /// - Throws: ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public func getDocumentExpiration(id: String) throws -> Date? {
        try checkLive()
        let seconds = try database.readStatement { db in
            try Double.fetchOne(db, sql: "SELECT expiration FROM \(tables.docs) WHERE id = ?", arguments: [id])
        }
        return seconds.map(Date.init(timeIntervalSince1970:))
    }

    // MARK: - Change listeners

    /// Calls `listener` after each commit that changed documents of this
    /// collection, in commit order, on `queue` (default: a serial queue of its own).
    public func addChangeListener(
        queue: DispatchQueue? = nil,
        listener: @escaping @Sendable (CollectionChange) -> Void
    ) -> ListenerToken {
        addListener(documentID: nil, queue: queue) { [self] changes in
            listener(CollectionChange(collection: self, documents: changes))
        }
    }

    /// Calls `listener` after each commit that changed the document `id`.
    public func addDocumentChangeListener(
        id: String,
        queue: DispatchQueue? = nil,
        listener: @escaping @Sendable (DocumentChange) -> Void
    ) -> ListenerToken {
        addListener(documentID: id, queue: queue) { [self] changes in
            for change in changes { listener(DocumentChange(collection: self, document: change)) }
        }
    }

    /// The collection's changes as an async sequence; it ends when the
    /// consuming task is cancelled.
    public func changes() -> AsyncStream<CollectionChange> {
        let (stream, continuation) = AsyncStream<CollectionChange>.makeStream()
        let token = addChangeListener { continuation.yield($0) }
        continuation.onTermination = { _ in token.remove() }
        return stream
    }

    /// The changes of one document as an async sequence.
    public func documentChanges(for id: String) -> AsyncStream<DocumentChange> {
        let (stream, continuation) = AsyncStream<DocumentChange>.makeStream()
        let token = addDocumentChangeListener(id: id) { continuation.yield($0) }
        continuation.onTermination = { _ in token.remove() }
        return stream
    }

    private func addListener(
        documentID: String?,
        queue: DispatchQueue?,
        deliver: @escaping @Sendable ([ChangedDocument]) -> Void
    ) -> ListenerToken {
        let queue = queue ?? DispatchQueue(label: "syncnode.listener.\(fullName)")
        let notifier = database.notifier
        let token = notifier.add(.init(collectionID: tableID, documentID: documentID, queue: queue, deliver: deliver))
        return ListenerToken { notifier.remove(token) }
    }
}
