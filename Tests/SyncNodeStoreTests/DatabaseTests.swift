import Foundation
import Synchronization
import GRDB
import Testing
@testable import SyncNodeStore

@Suite struct DatabaseTests {
    @Test func openCloseDeleteExists() throws {
        let dir = try TempDirectory()
        #expect(!Database.exists(name: "db", directory: dir.url))
        let db = try dir.open()
        let uuid = db.uuid
        #expect(Database.exists(name: "db", directory: dir.url))
        #expect(db.path.lastPathComponent == "db.syncnode")
        try db.defaultCollection().save(MutableDocument(id: "x"))
        try db.close()
        #expect(throws: StoreError.databaseClosed("db")) { try db.defaultCollection() }
        let again = try dir.open()
        #expect(again.uuid == uuid)
        #expect(try again.defaultCollection().document(id: "x") != nil)
        try again.delete()
        #expect(!Database.exists(name: "db", directory: dir.url))
        #expect(throws: StoreError.self) { try Database.delete(name: "db", directory: dir.url) }
    }

    /// SQLite's errors keep their result code: a full disk (here: the file held to its size) is
    /// `SQLITE_FULL` with what to do, and the save it refused leaves nothing half-written; a
    /// file that is not a database is `SQLITE_NOTADB`.
    @Test func sqliteErrorsKeepTheirResultCodes() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let c = try db.defaultCollection()
        try c.save(MutableDocument(id: "kept", data: ["n": 1]))
        let pages = try #require(try db.pool.write { try Int.fetchOne($0, sql: "PRAGMA page_count") })
        try db.pool.write { try $0.execute(sql: "PRAGMA max_page_count = \(pages)") }
        let big = try MutableDocument(id: "big", data: ["text": String(repeating: "x", count: 1 << 20)])
        do {
            try c.save(big)
            Issue.record("a save past the file's size limit succeeded")
        } catch StoreError.sqlite(let code, _) {
            #expect(code & 0xff == 13, "result code \(code)")
        }
        #expect(try c.document(id: "big") == nil && c.document(id: "kept") != nil)
        #expect(StoreError.sqlite(code: 13, message: "x").description.contains("the disk is full"))
        try db.close()

        let file = dir.url.appendingPathComponent("junk.syncnode/db.sqlite3")
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(repeating: 0x41, count: 4096).write(to: file)
        do {
            _ = try Database(name: "junk", config: DatabaseConfiguration(directory: dir.url))
            Issue.record("a file that is not a database opened")
        } catch StoreError.sqlite(let code, let message) {
            #expect(code & 0xff == 26 && message.contains("junk.syncnode"), "\(code) \(message)")
        }
    }

    /// The log is copied into the database file by the checkpointer beside the writer: it stays
    /// small while commits go on, even past a reader's old snapshot, and nothing is lost.
    /// Opens the database in `dir` again: it holds `count` documents and passes SQLite's integrity check.
    static func expectIntactAfterReopening(_ dir: TempDirectory, count: Int) throws {
        let again = try dir.open()
        defer { try? again.close() }
        #expect(try again.defaultCollection().count == count)
        #expect(try again.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
    }

    /// When the checkpointer falls behind a steady writer (here: held), the writer copies the log
    /// itself at 16 MiB, so the log restarts instead of growing with the data.
    @Test func theLogStaysBoundedWhenTheCheckpointerFallsBehind() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let c = try db.defaultCollection()
        let wal = db.path.appendingPathComponent("db.sqlite3-wal").path
        func walBytes() -> Int { ((try? FileManager.default.attributesOfItem(atPath: wal))?[.size] as? Int) ?? 0 }
        let filler = String(repeating: "y", count: 1000)
        db.checkpointer.queue.suspend()
        var largest = 0
        for batch in 0..<150 {
            try db.inBatch {
                for i in 0..<200 { try c.save(MutableDocument(id: "d\(batch)-\(i)", values: ["text": .string(filler)])) }
            }
            largest = max(largest, walBytes())
        }
        db.checkpointer.queue.resume()
        // 30,000 documents of 1 KB went through the log; 16 MiB and a batch is its bound.
        #expect(largest < 20_000_000, "log of \(largest) bytes")
        #expect(try c.count == 30_000)
        try db.close()
        try Self.expectIntactAfterReopening(dir, count: 30_000)
    }

    @Test func theLogIsCheckpointedBesideTheWriter() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let c = try db.defaultCollection()
        let filler = String(repeating: "x", count: 1000)
        func write(_ batch: Int) throws {
            try db.inBatch {
                for i in 0..<200 { try c.save(MutableDocument(id: "d\(batch)-\(i)", values: ["text": .string(filler)])) }
            }
        }
        let wal = db.path.appendingPathComponent("db.sqlite3-wal").path
        func walBytes() -> Int { ((try? FileManager.default.attributesOfItem(atPath: wal))?[.size] as? Int) ?? 0 }
        // A reader's snapshot keeps frames from being copied: the log grows meanwhile.
        let other = try dir.open()
        try other.read { db in
            _ = try Int.fetchOne(db, sql: "SELECT count(*) FROM c1_docs")
            for batch in 0..<10 { try write(batch) }
        }
        try? other.close()
        // Now and then the writer pauses longer than the checkpointer waits for a quiet writer.
        for batch in 10..<60 {
            try write(batch)
            try await Task.sleep(for: .milliseconds(batch.isMultiple(of: 5) ? 80 : 5))
        }
        try await eventually { db.checkpointer.passes >= 2 }
        #expect(db.checkpointer.passes >= 2)
        // 60 batches of about 250 KB each went through a log that restarted from its beginning.
        #expect(walBytes() < 8_000_000, "log of \(walBytes()) bytes")
        #expect(try c.count == 12_000)
        try db.close()
        try Self.expectIntactAfterReopening(dir, count: 12_000)
    }

    /// Behind a steady writer of single saves the passes never catch up with the log, so a pass
    /// (two fsyncs) is asked for once per ``BackgroundCheckpointer/requestPages`` of new log, not
    /// after every commit (which made a pass every few saves).
    @Test func singleSavesAskForAPassPerStretchOfLog() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let c = try db.defaultCollection()
        let filler = String(repeating: "x", count: 1000)
        let saves = 1500
        for i in 0..<saves {
            try c.save(MutableDocument(id: "d\(i)", values: ["text": .string(filler)]))
            if i.isMultiple(of: 100) { await Task.yield() }
        }
        db.checkpointer.queue.sync {}
        // Each save logs a few pages (its document, the indexes, the counters): some thousands in
        // all, so a few dozen requests at most, against one per commit past the first 256 pages.
        let passes = db.checkpointer.passes
        #expect(passes >= 1 && passes <= 60, "\(passes) passes for \(saves) saves")
        #expect(try c.count == saves)
        try db.close()
        try Self.expectIntactAfterReopening(dir, count: saves)
    }

    @Test(arguments: ["", "a.b", "a/b", "../x", "_x", ".hidden", String(repeating: "n", count: 201)])
    func badDatabaseNamesAreRejected(_ name: String) throws {
        let dir = try TempDirectory()
        #expect(throws: StoreError.self) { try dir.open(name) }
    }

    /// Counts come from the sequence index less a partial index of tombstones, which a
    /// database made before that index gets when it is opened.
    @Test func countsLeaveTombstonesOutAndOlderFilesGetTheirIndex() throws {
        let dir = try TempDirectory()
        var db = try dir.open()
        var c = try db.defaultCollection()
        for i in 0..<10 { try c.save(try MutableDocument(id: "d\(i)", data: ["i": i])) }
        for i in 0..<3 { try c.delete(id: "d\(i)") }
        try c.purge(id: "d9")
        #expect(try c.count == 6 && c.deletedCount() == 3)
        // As an older file: no tombstone index and no record of its migration.
        try db.write { db in
            try db.execute(sql: "DROP INDEX \(c.tables.docs)_deleted")
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v4-deleted-index'")
        }
        try db.close()
        db = try dir.open()
        defer { try? db.close() }
        c = try db.defaultCollection()
        let indexed = try db.read { db in
            try Bool.fetchOne(db, sql: "SELECT count(*) FROM sqlite_master WHERE name = ?", arguments: ["\(c.tables.docs)_deleted"])
        }
        #expect(indexed == true)
        #expect(try c.count == 6 && c.deletedCount() == 3)
    }

    /// Compaction gives free pages back a batch at a time (incremental vacuum, set on every new
    /// file); a file made before that is rewritten whole once, and kept so from then on.
    @Test func compactionGivesSpaceBackAndOlderFilesLearnHow() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        func pragma(_ name: String) throws -> Int { try db.read { try Int.fetchOne($0, sql: "PRAGMA \(name)") } ?? -1 }
        #expect(try pragma("auto_vacuum") == Database.incrementalVacuum)
        for i in 0..<300 { try c.save(try MutableDocument(id: "d\(i)", data: ["text": String(repeating: "x", count: 10_000)])) }
        for i in 0..<300 { try c.purge(id: "d\(i)") }
        let pages = try pragma("page_count")
        #expect(try pragma("freelist_count") > 500)
        try db.compact()
        #expect(try pragma("freelist_count") == 0 && pragma("page_count") < pages / 4)

        try db.pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA auto_vacuum = 0")
            try db.execute(sql: "VACUUM")
        }
        #expect(try pragma("auto_vacuum") == 0)
        try db.compact()
        #expect(try pragma("auto_vacuum") == Database.incrementalVacuum)
        #expect(try db.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
    }

    /// A file whose stored winner predates CouchDB's order (text order between a 32-hex suffix and
    /// a 40-hex one) shows CouchDB's winner once opened, with every leaf and body kept.
    @Test func openingAnOlderFileRepicksWinnersInCouchDBsOrder() throws {
        let dir = try TempDirectory()
        var db = try dir.open()
        var c = try db.defaultCollection()
        let hex32 = "2-" + String(repeating: "0", count: 31) + "1", hex40 = "2-" + String(repeating: "0", count: 40)
        _ = try c.insertRevision(id: "d", history: [hex32, "1-a"], deleted: false, body: CanonicalBody(object: ["v": "32"]))
        _ = try c.insertRevision(id: "d", history: [hex40, "1-a"], deleted: false, body: CanonicalBody(object: ["v": "40"]))
        #expect(try c.document(id: "d")?.revisionID == hex40)  // CouchDB's: bytes 00.. < characters '0'..
        // As an older node stored it: the 32-hex leaf (the text-order winner) in the row.
        try db.write { db in
            let row = try Row.fetchOne(db, sql: "SELECT key, body FROM \(c.tables.docs) WHERE id = 'd'")!
            let key: Int64 = row["key"]
            let other = try String.fetchOne(db, sql: "SELECT body FROM \(c.tables.revs) WHERE doc_key = ? AND rev = ?", arguments: [key, hex32])!
            try db.execute(sql: "UPDATE \(c.tables.revs) SET rev = ?, body = ? WHERE doc_key = ? AND rev = ?", arguments: [hex40, row["body"] as String, key, hex32])
            try db.execute(sql: "UPDATE \(c.tables.docs) SET rev = ?, body = ? WHERE key = ?", arguments: [hex32, other, key])
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = 'v5-couchdb-winners'")
        }
        #expect(try c.document(id: "d")?.string(forKey: "v") == "32")
        try db.close()
        db = try dir.open()
        defer { try? db.close() }
        c = try db.defaultCollection()
        #expect(try c.document(id: "d")?.revisionID == hex40)
        #expect(try c.document(id: "d")?.string(forKey: "v") == "40")
        #expect(try c.revision(id: "d", rev: hex32)?.body == #"{"v":"32"}"#)
        #expect(try c.conflictingRevisions(id: "d") == [hex32])
    }

    /// Whatever the umask, a database is readable by its owner only.
    @Test func databaseFilesAreTheOwnersAlone() throws {
        let dir = try TempDirectory()
        let previous = umask(0o022)
        defer { umask(previous) }
        let db = try dir.open()
        defer { try? db.close() }
        try db.defaultCollection().save(try MutableDocument(id: "d", data: ["secret": 1]))
        func mode(_ path: String) throws -> Int {
            (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue ?? -1
        }
        #expect(try mode(db.path.path) == 0o700)
        #expect(try mode(db.path.appendingPathComponent("db.sqlite3").path) & 0o077 == 0)
    }

    @Test func copyMakesANewDatabaseWithANewUUID() throws {
        let dir = try TempDirectory()
        let source = try dir.open("prebuilt")
        try source.defaultCollection().save(try MutableDocument(id: "seed", data: ["v": 1]))
        let sourceUUID = source.uuid
        let sourcePath = source.path
        try source.close()
        try Database.copy(fromPath: sourcePath, toDatabase: "copy", config: DatabaseConfiguration(directory: dir.url))
        let copy = try dir.open("copy")
        defer { try? copy.close() }
        #expect(copy.uuid != sourceUUID)
        #expect(try copy.defaultCollection().document(id: "seed")?.int(forKey: "v") == 1)
        #expect(throws: StoreError.self) {
            try Database.copy(fromPath: sourcePath, toDatabase: "copy", config: DatabaseConfiguration(directory: dir.url))
        }
    }

    @Test func aCopyThatFailsLeavesNothingBehind() throws {
        let dir = try TempDirectory()
        let source = try dir.open("prebuilt")
        let doc = MutableDocument(id: "photo")
        doc.setBlob(Blob(contentType: "image/png", data: Data("pixels".utf8)), forKey: "image")
        try source.defaultCollection().save(doc)
        let sourcePath = source.path
        try source.close()
        // A link to nothing: copied as a link, then it cannot be opened to be made durable.
        let dangling = sourcePath.appendingPathComponent("blobs/dangling")
        try FileManager.default.createSymbolicLink(atPath: dangling.path, withDestinationPath: "/nonexistent/syncnode")
        let config = DatabaseConfiguration(directory: dir.url)
        #expect(throws: StoreError.self) { try Database.copy(fromPath: sourcePath, toDatabase: "copy", config: config) }
        #expect(!FileManager.default.fileExists(atPath: Database.directory(name: "copy", in: dir.url).path))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir.url.path).filter { $0.hasPrefix(".copying-") }.isEmpty)
        // Half a copy would have made this one fail with alreadyExists.
        try FileManager.default.removeItem(at: dangling)
        try Database.copy(fromPath: sourcePath, toDatabase: "copy", config: config)
        let copy = try dir.open("copy")
        defer { try? copy.close() }
        #expect(try copy.defaultCollection().document(id: "photo")?.blob(forKey: "image")?.content == Data("pixels".utf8))
    }

    @Test func scopesAndCollections() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        #expect(try db.scopes().map(\.name) == ["_default"])
        #expect(try db.collections().map(\.name) == ["_default"])
        let tasks = try db.createCollection(name: "tasks", scope: "work")
        #expect(try db.createCollection(name: "tasks", scope: "work") === tasks)
        try db.createCollection(name: "notes", scope: "work")
        #expect(try db.scopes().map(\.name) == ["_default", "work"])
        #expect(try db.scope(name: "work")?.collections().map(\.fullName) == ["work.notes", "work.tasks"])
        #expect(try db.collection(name: "nope", scope: "work") == nil)

        // Each collection has its own sequence.
        let a = MutableDocument(), b = MutableDocument()
        try tasks.save(a)
        try db.defaultCollection().save(b)
        #expect(a.sequence == 1 && b.sequence == 1)

        try db.deleteCollection(name: "tasks", scope: "work")
        #expect(throws: StoreError.collectionDeleted("work.tasks")) { try tasks.save(MutableDocument()) }
        #expect(try db.collection(name: "tasks", scope: "work") == nil)
        let recreated = try db.createCollection(name: "tasks", scope: "work")
        #expect(try recreated.count == 0)
        #expect(throws: StoreError.self) { try db.deleteCollection(name: "_default") }
        #expect(throws: StoreError.self) { try db.deleteCollection(name: "missing", scope: "work") }
    }

    /// A lookup racing a deletion (a mesh node's replication asks for a collection as an app
    /// deletes it) does not leave the deleted collection standing for its name: the name then
    /// gives a new collection that works.
    @Test func aLookupRacingADeletionDoesNotKeepTheDeletedCollection() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let stop = Atomic(false)
        let looker = Task.detached {
            while !stop.load(ordering: .relaxed) { _ = try? db.collection(name: "tasks", scope: "app") }
        }
        for round in 0..<300 {
            let tasks = try db.createCollection(name: "tasks", scope: "app")
            do {
                #expect(try tasks.count == 0)
                try tasks.save(MutableDocument(id: "d"))
            } catch {
                Issue.record("round \(round): \(error)")
                break
            }
            try db.deleteCollection(name: "tasks", scope: "app")
        }
        stop.store(true, ordering: .relaxed)
        await looker.value
    }

    @Test(arguments: ["", "_x", "%x", "a.b", "a b", "ü", String(repeating: "c", count: 252)])
    func badCollectionNamesAreRejected(_ name: String) throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        #expect(throws: StoreError.self) { try db.createCollection(name: name, scope: "s") }
        #expect(throws: StoreError.self) { try db.createCollection(name: "ok", scope: name) }
    }

    @Test func concurrentWritersAndReadersLoseNothing() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for w in 0..<8 {
                group.addTask {
                    for i in 0..<100 {
                        try c.save(try MutableDocument(id: "w\(w)-\(i)", data: ["i": i]))
                        _ = try c.document(id: "w\(w)-\(max(0, i - 1))")
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try c.count == 800)
        #expect(try c.lastSequence() == 800)
        #expect(Set(try c.changes(since: 0).map(\.sequence)).count == 800)
    }

    /// A collection made after the newest one was deleted gets a new ID (its
    /// tables, listeners and compiled queries are keyed by it).
    @Test func collectionIDsAreNeverReused() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        _ = try db.createCollection(name: "a")
        let newest = try db.createCollection(name: "b").tableID
        try db.deleteCollection(name: "b")
        #expect(try db.createCollection(name: "c").tableID > newest)
        try db.close()
        let reopened = try dir.open()
        defer { try? reopened.close() }
        try reopened.deleteCollection(name: "c")
        #expect(try reopened.createCollection(name: "d").tableID > newest + 1)
    }
}
