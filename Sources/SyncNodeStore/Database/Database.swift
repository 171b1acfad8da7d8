import Foundation
import GRDB
import Logging
import Synchronization

/// An embedded document database: a directory `<name>.syncnode/` holding a
/// SQLite file (WAL mode: readers never block the writer) and a blob store.
///
/// ```swift
/// let db = try Database(name: "app", config: DatabaseConfiguration(directory: dir))
/// let tasks = try db.createCollection(name: "tasks", scope: "work")
/// let doc = MutableDocument(id: "t1")
/// doc.setString("Buy milk", forKey: "title")
/// try tasks.save(doc)
/// ```
///
/// A `Database` is `Sendable`: use it from any task or thread. Writes are
/// serialized on one connection; ``inBatch(_:)`` groups writes into one
/// all-or-nothing transaction.
public final class Database: Sendable {
    /// The database's name (its directory is `<name>.syncnode`).
    public let name: String
    /// The configuration it was opened with.
    public let config: DatabaseConfiguration
    /// The database directory, `<config.directory>/<name>.syncnode`.
    public let path: URL
    /// A private UUID, made when the database is created (and anew for a
    /// copy), stable for its lifetime. Replication checkpoints are keyed on it.
    public let uuid: String

    let pool: DatabasePool
    let blobStore: BlobStore
    let notifier = ChangeNotifier()
    let logger: Logger
    let expiry = ExpiryScheduler()
    let tombstoneReaper = TombstoneReaper()
    let sequences = SequenceAllocator()
    /// What the current write transaction changes in the collections' digests.
    let digests = DigestLedger()
    let externalChanges = ExternalChangeWatcher()
    let pointReader: PointReader
    let checkpointer: BackgroundCheckpointer
    let state = Mutex(State())

    struct State {
        var isClosed = false
        var collections: [String: DocumentCollection] = [:]
        var schemaGeneration = 0
        /// Set by ``setRevsLimit(_:)`` (kept in the file); nil follows the configuration.
        var revsLimit: Int?
        /// ``withBulkWrites(_:)`` calls under way.
        var bulkWriters = 0
        var tombstonePolicy: TombstonePolicy?
    }

    /// Counts collection and index creations and deletions in this process:
    /// compiled queries made before a change compile again (a collection made
    /// again has another table; an index changes the plan or the FTS join).
    var schemaGeneration: Int { state.withLock { $0.schemaGeneration } }

    /// The limit ``setRevsLimit(_:)`` set, read from the file at open.
    var storedRevsLimit: Int? {
        get { state.withLock { $0.revsLimit } }
        set { state.withLock { $0.revsLimit = newValue } }
    }

    /// Called in the transaction that creates or deletes a collection or index:
    /// once it commits (inside a batch, the batch), compiled queries are
    /// outdated and live queries subscribe again; a rollback changes nothing.
    func schemaChanges(_ db: GRDB.Database) {
        db.afterNextTransaction(onCommit: { [self] _ in
            state.withLock { $0.schemaGeneration += 1 }
            notifier.collectionsDidChange()
        })
    }

    static let fileName = "db.sqlite3"

    /// Opens the database `name` in `config.directory`, creating it if needed.
    ///
    /// Expired documents are purged as it opens (catching up on time it was
    /// closed), then by a background timer.
    /// - Throws: ``StoreError/invalidName(_:reason:)`` for a name that breaks the rules (empty, over 200
    ///   bytes, not starting with a letter or digit, or holding characters other than letters, digits and
    ///   `_ - $ ( ) +`); ``StoreError/io(_:)`` when its directory cannot be created;
    ///   ``StoreError/storage(_:)`` when SQLite cannot open or migrate the file.
    public init(name: String, config: DatabaseConfiguration = DatabaseConfiguration()) throws {
        try Names.validateDatabase(name)
        self.name = name
        self.config = config
        self.logger = config.logger
        self.path = Self.directory(name: name, in: config.directory)
        do {
            try FileManager.default.createDirectory(at: path, withIntermediateDirectories: true)
            // The owner's alone, whatever the umask: documents are nobody else's to read.
            try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: path.path)
        } catch {
            throw StoreError.io("cannot create database directory \(path.path): \(error.localizedDescription)")
        }
        blobStore = try BlobStore(directory: path.appendingPathComponent("blobs"))
        blobStore.removeTemporaryFiles()
        var grdb = Configuration()
        grdb.label = "syncnode.\(name)"
        grdb.busyMode = .timeout(Self.busyTimeout)
        grdb.prepareDatabase { db in
            SQLFunctions.register(db)
            // Only a file with no pages yet (before its journal mode is set) can take this: it lets
            // compaction give space back a batch at a time instead of rewriting the file.
            if try Int.fetchOne(db, sql: "PRAGMA page_count") == 0 {
                try db.execute(sql: "PRAGMA auto_vacuum = \(Self.incrementalVacuum)")
            }
        }
        let file = path.appendingPathComponent(Self.fileName).path
        pointReader = PointReader(path: file, databaseName: name)
        let checkpointer = BackgroundCheckpointer(path: file)
        self.checkpointer = checkpointer
        do {
            pool = try DatabasePool(path: file, configuration: grdb)
            pool.writeWithoutTransaction { db in checkpointer.install(on: db) }
            // SQLite gives -wal and -shm files the main file's mode, so they follow.
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: file + suffix) {
                try? FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file + suffix)
            }
            uuid = try Schema.migrate(pool)
            let stored = try pool.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'revs_limit'") }
            state.withLock { $0.revsLimit = stored.flatMap(Int.init) }
        } catch let error as DatabaseError {
            throw StoreError.from(error, doing: "opening \(path.path)")
        }
        logger.debug("opened database", metadata: ["name": "\(name)", "path": "\(path.path)"])
        expiry.start(database: self)
        try externalChanges.start(database: self)
    }

    /// True when a database named `name` exists in `directory`.
    public static func exists(name: String, directory: URL) -> Bool {
        FileManager.default.fileExists(atPath: Self.directory(name: name, in: directory).appendingPathComponent(fileName).path)
    }

    /// Deletes the database `name` in `directory` (it must not be open).
    /// - Throws: ``StoreError/invalidName(_:reason:)`` for an invalid name; ``StoreError/notFound(_:_:)``
    ///   (``StoreError/Subject/database``) when there is no such directory; ``StoreError/io(_:)`` when it
    ///   cannot be removed.
    public static func delete(name: String, directory: URL) throws {
        try Names.validateDatabase(name)
        let dir = Self.directory(name: name, in: directory)
        guard FileManager.default.fileExists(atPath: dir.path) else { throw StoreError.notFound(.database, "database '\(name)' in \(directory.path)") }
        try remove(dir)
    }

    /// Removes a database's directory: renamed out of the way first (one atomic step, so the
    /// name is gone at once and nothing a straggler writes can bring it back), then deleted.
    /// A removal that fails (a request still writing into it) is left to the next
    /// ``removeDeletedLeftovers(in:)``, not waited for (callers hold the open/delete lock):
    /// the database is gone either way.
    static func remove(_ dir: URL) throws {
        let doomed = dir.deletingLastPathComponent().appendingPathComponent(".deleted-\(UUID().uuidString)")
        guard rename(dir.path, doomed.path) == 0 else {
            throw StoreError.io("deleting \(dir.path): \(String(cString: strerror(errno)))")
        }
        try? FileManager.default.removeItem(at: doomed)
    }

    /// Removes what deletions left behind in `directory` (see ``delete(name:directory:)``), and
    /// copies killed midway an hour ago or more.
    public static func removeDeletedLeftovers(in directory: URL) {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        for name in names where name.hasPrefix(".deleted-") {
            try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))
        }
        // Copies killed midway (``copy(fromPath:toDatabase:config:)``); a younger one may still be copying.
        AbandonedFiles.remove(in: directory, prefix: ".copying-")
    }

    /// Installs a pre-built database: copies the `.syncnode` directory at
    /// `path` as database `name` in `config.directory`, giving the copy a new
    /// UUID so replication treats it as a new peer.
    /// - Throws: ``StoreError/invalidName(_:reason:)`` for an invalid name; ``StoreError/notFound(_:_:)``
    ///   (``StoreError/Subject/database``) when `path` holds no database file;
    ///   ``StoreError/alreadyExists(_:)`` when database `name` exists; ``StoreError/io(_:)`` when copying
    ///   fails; and the errors of ``init(name:config:)`` opening the copy.
    public static func copy(fromPath path: URL, toDatabase name: String, config: DatabaseConfiguration = DatabaseConfiguration()) throws {
        try Names.validateDatabase(name)
        let source = path.appendingPathComponent(fileName)
        guard FileManager.default.fileExists(atPath: source.path) else {
            throw StoreError.notFound(.database, "no database at \(path.path) (expected \(fileName) inside)")
        }
        let target = Self.directory(name: name, in: config.directory)
        guard !FileManager.default.fileExists(atPath: target.path) else {
            throw StoreError.alreadyExists("database '\(name)' in \(config.directory.path)")
        }
        // Copied under a name of its own and made durable (its files, blobs included), then
        // renamed into place in one step: half a copy, from a failure or a kill, never passes for
        // a database, and a database made meanwhile under `name` is left alone (`rename` would
        // replace only an empty folder, and a database's folder is never empty).
        let staging = config.directory.appendingPathComponent(".copying-\(UUID().uuidString)")
        do {
            try FileManager.default.createDirectory(at: config.directory, withIntermediateDirectories: true)
            try FileManager.default.copyItem(at: path, to: staging)
            try? FileManager.default.removeItem(at: staging.appendingPathComponent(fileName + "-shm"))
            try Durability.syncTree(at: staging)
        } catch {
            try? FileManager.default.removeItem(at: staging)
            throw error as? StoreError ?? StoreError.io("copying \(path.path) to \(target.path): \(error.localizedDescription)")
        }
        guard rename(staging.path, target.path) == 0 else {
            let error = errno
            try? FileManager.default.removeItem(at: staging)
            if error == EEXIST || error == ENOTEMPTY { throw StoreError.alreadyExists("database '\(name)' in \(config.directory.path)") }
            throw StoreError.io("installing the copy as \(target.path): \(String(cString: strerror(error)))")
        }
        try Durability.sync(path: config.directory.path)
        let copy = try Database(name: name, config: config)
        try copy.write { db in try Schema.assignNewUUID(db) }
        try copy.close()
    }

    static func directory(name: String, in directory: URL) -> URL {
        directory.appendingPathComponent("\(name).syncnode", isDirectory: true)
    }

    /// Whether ``close()`` (or a deletion) closed it.
    package var isClosed: Bool { state.withLock { $0.isClosed } }

    /// Calls `listener` once, when the database closes or is deleted (at once, on `queue`, when it
    /// already has): what waits for changes (a long poll) then stops waiting.
    package func addCloseListener(queue: DispatchQueue = .global(), _ listener: @escaping @Sendable () -> Void) -> ListenerToken {
        let notifier = notifier
        // Under the lock `close()` marks the database closed with: added before, it is told by
        // `close()`; closed before, it is told here; never both.
        let token = state.withLock { s in
            s.isClosed ? nil : notifier.add(.init(collectionID: ChangeNotifier.databaseClosed, documentID: nil, queue: queue) { _ in listener() })
        }
        guard let token else {
            queue.async { listener() }
            return ListenerToken {}
        }
        return ListenerToken { notifier.remove(token) }
    }

    /// Closes the database. Its collections and documents can no longer be used.
    ///
    /// Closing a closed database does nothing.
    /// - Throws: ``StoreError/storage(_:)`` when SQLite fails to close (the database counts as closed anyway).
    public func close() throws {
        let wasOpen = state.withLock { s in
            defer { s.isClosed = true; s.collections = [:] }
            return !s.isClosed
        }
        guard wasOpen else { return }
        notifier.deliver(collectionID: ChangeNotifier.databaseClosed, changes: [])
        expiry.stop()
        tombstoneReaper.stop()
        externalChanges.stop()
        pointReader.close()
        // After the pool (whose writer asks it for passes), whether or not the pool closes cleanly.
        defer { checkpointer.close() }
        do {
            try pool.close()
        } catch {
            throw StoreError.from(error, doing: "closing \(name)")
        }
        logger.debug("closed database", metadata: ["name": "\(name)"])
    }

    /// Closes the database and deletes its directory.
    /// - Throws: ``StoreError/storage(_:)`` when closing fails; ``StoreError/io(_:)`` when the directory
    ///   cannot be removed.
    public func delete() throws {
        try close()
        try Self.remove(path)
    }

    /// Runs `body` as one transaction: every save, delete and purge in it
    /// commits together or, if it throws, none does. Change listeners hear of
    /// the batch after it commits, and not at all if it rolls back.
    ///
    /// Nested calls join the outer batch.
    /// - Throws: whatever `body` throws (after rolling back); ``StoreError/databaseClosed(_:)`` when the
    ///   database is closed; ``StoreError/storage(_:)`` when SQLite fails to begin or commit.
    public func inBatch(_ body: () throws -> Void) throws {
        try write { _ in try body() }
    }

    /// Runs bulk work (an import, a first pull of a large database) without
    /// watching for other processes' commits meanwhile, then checkpoints the
    /// write-ahead log into the database file and empties it.
    ///
    /// The watch would wake on every page written (an inotify event each: about
    /// 4% of a pull's CPU). Commits other processes made meanwhile are announced
    /// once the last of overlapping bulk writers ends. The log is copied into the
    /// database file beside the writing, as always (`BackgroundCheckpointer`).
    ///
    /// `body` is not a transaction: wrap it in ``inBatch(_:)`` for that.
    /// - Throws: whatever `body` throws; ``StoreError/databaseClosed(_:)`` when the database is closed
    ///   (a failure of the final checkpoint is ignored: the log keeps what it did not copy).
    public func withBulkWrites<T>(_ body: () throws -> T) throws -> T {
        try beginBulkWrites()
        defer { endBulkWrites() }
        return try body()
    }

    /// ``withBulkWrites(_:)`` for async work.
    /// - Throws: whatever `body` throws; ``StoreError/databaseClosed(_:)`` when the database is closed.
    public func withBulkWrites<T>(_ body: () async throws -> T) async throws -> T {
        try beginBulkWrites()
        defer { endBulkWrites() }
        return try await body()
    }

    /// The first of overlapping bulk writers sets them up, the last ends them.
    private func beginBulkWrites() throws {
        try checkOpen()
        let first = state.withLock { s in
            s.bulkWriters += 1
            return s.bulkWriters == 1
        }
        if first { externalChanges.pause() }
    }

    private func endBulkWrites() {
        let last = state.withLock { s in
            s.bulkWriters -= 1
            return s.bulkWriters == 0
        }
        guard last else { return }
        try? mappingErrors { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") } }
        externalChanges.resume()
    }

    // MARK: - Access

    func checkOpen() throws {
        if state.withLock({ $0.isClosed }) { throw StoreError.databaseClosed(name) }
    }

    /// Runs `body` on the writer connection inside a transaction (the
    /// current one when called from inside a batch).
    func write<T>(_ body: (GRDB.Database) throws -> T) throws -> T {
        // Nested in this thread's transaction (a batch): join it directly.
        if let db = ThreadConnection.writer(for: self) { return try mappingErrors { try body(db) } }
        try checkOpen()
        return try mappingErrors {
            try pool.unsafeReentrantWrite { db in
                if db.isInsideTransaction { return try body(db) }
                var result: Swift.Result<T, Error>?
                try ThreadConnection.marking(self, on: db, writing: true) {
                    try db.inTransaction {
                        sequences.beginTransaction()
                        digests.beginTransaction()
                        result = Swift.Result { try body(db) }
                        if case .failure = result { return .rollback }
                        try digests.flush(db, with: sequences)
                        let counters = try sequences.flush(db)
                        // Recorded before the commit: a poll in between must not take these for another process's.
                        externalChanges.noteOwnCommit(counters)
                        return .commit
                    }
                }
                guard let result else { throw StoreError.storage("transaction did not run") }
                return try result.get()
            }
        }
    }

    /// Runs `body` on a reader (or, inside a batch, on the writer, so a batch
    /// sees its own writes). Multi-statement reads get one snapshot.
    func read<T>(_ body: (GRDB.Database) throws -> T) throws -> T {
        // Nested in this thread's transaction (a batch, or a snapshot such as `_bulk_get`'s): join it.
        if let db = ThreadConnection.any(for: self) { return try mappingErrors { try body(db) } }
        try checkOpen()
        return try mappingErrors {
            try pool.unsafeReentrantRead { db in
                if db.isInsideTransaction { return try body(db) }
                var result: Swift.Result<T, Error>?
                try db.inTransaction(.deferred) {
                    result = ThreadConnection.marking(self, on: db, writing: false) { Swift.Result { try body(db) } }
                    return .commit
                }
                guard let result else { throw StoreError.storage("transaction did not run") }
                return try result.get()
            }
        }
    }

    /// A single-statement read: no transaction needed, which keeps point lookups cheap.
    func readStatement<T>(_ body: (GRDB.Database) throws -> T) throws -> T {
        if let db = ThreadConnection.any(for: self) { return try mappingErrors { try body(db) } }
        try checkOpen()
        return try mappingErrors { try pool.unsafeReentrantRead(body) }
    }

    func mappingErrors<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as DatabaseError {
            // Closed while the call was under way: GRDB reports a misuse of its closed connection.
            if error.resultCode == .SQLITE_MISUSE || state.withLock({ $0.isClosed }) {
                throw StoreError.databaseClosed(name)
            }
            throw StoreError.sqlite(code: error.extendedResultCode.rawValue, message: error.message ?? error.description)
        }
    }
}
