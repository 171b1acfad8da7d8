import Foundation
import CXattr
import Testing
@testable import SyncNodeStore

@Suite struct BlobTests {
    func blobFiles(_ db: Database) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: db.path.appendingPathComponent("blobs").path)
            .filter { $0.hasSuffix(".blob") }
    }

    /// The MD5 peers exchange is computed once, kept with the blob (in an extended attribute,
    /// or a sidecar file where the file system has none), and goes with it. Content written
    /// from memory has it kept as it is written, not read back when first served.
    @Test func md5DigestsAreKeptWithTheirBlobAndGoWithIt() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let digest = try c.storeBlobContent(Data("hello".utf8))
        let folder = db.path.appendingPathComponent("blobs")
        let url = try #require(c.blobFile(digest: digest))
        #expect(BlobMD5Note.read(beside: url) == "md5-XUFAKrxLKna5cZ2REBfFkg==")  // CouchDB's digest of "hello"
        #expect(c.blobMD5(digest: digest) == "md5-XUFAKrxLKna5cZ2REBfFkg==")
        let sidecars = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".md5") }
        #expect(sidecars.count == (BlobMD5Note.attribute(of: url) == nil ? 1 : 0))
        // Read back by another store (as after a restart), then gone with the blob.
        let other = try BlobStore(directory: folder)
        #expect(other.md5(digest: digest) == "md5-XUFAKrxLKna5cZ2REBfFkg==")
        other.delete(digest: digest)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") }.isEmpty)
        #expect(other.md5(digest: digest) == nil)
    }

    /// A blob saved with a document from memory has its MD5 kept as it is written.
    @Test func aSavedBlobsMD5IsKeptAsItIsWritten() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let doc = MutableDocument(id: "saved")
        doc.setBlob(Blob(contentType: "text/plain", data: Data("saved through the API".utf8)), forKey: "note")
        try c.save(doc)
        let saved = try #require(try c.document(id: "saved")?.blob(forKey: "note"))
        #expect(BlobMD5Note.read(beside: try #require(c.blobFile(digest: saved.digest))) == "md5-puEA1ncSK1g17IssmIz2VA==")
    }

    /// A sidecar an earlier version kept is read, and deleted with its blob.
    @Test func anEarlierVersionsMD5SidecarIsRead() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let digest = try c.storeBlobContent(Data("kept by an earlier version".utf8))
        let url = try #require(c.blobFile(digest: digest))
        // Earlier versions kept no attribute.
        #if canImport(Darwin)
        removexattr(url.path, "user.syncnode.md5", 0)
        #else
        removexattr(url.path, "user.syncnode.md5")
        #endif
        // Not the content's digest: proof that it was read, not computed.
        try Data("md5-fromTheSidecar".utf8).write(to: BlobMD5Note.sidecar(of: url))
        let store = try BlobStore(directory: url.deletingLastPathComponent())
        #expect(store.md5(digest: digest) == "md5-fromTheSidecar")
        store.delete(digest: digest)
        #expect(!FileManager.default.fileExists(atPath: BlobMD5Note.sidecar(of: url).path))
    }

    /// Blobs are the owner's alone, as every other file of a database: folder 0700, files 0600,
    /// however they arrived (bytes, a file, a stream), and an older 0755 folder is fixed on open.
    @Test func blobFilesAreTheOwnersAlone() throws {
        let dir = try TempDirectory()
        let folder: URL
        do {
            let db = try dir.open()
            defer { try? db.close() }
            let c = try db.defaultCollection()
            folder = db.path.appendingPathComponent("blobs")
            let source = dir.url.appendingPathComponent("source.bin")
            try Data("from a file".utf8).write(to: source)
            let doc = MutableDocument(id: "d")
            doc.setBlob(Blob(contentType: "text/plain", data: Data("from bytes".utf8)), forKey: "bytes")
            doc.setBlob(try Blob(contentType: "text/plain", fileURL: source), forKey: "file")
            doc.setBlob(try Blob(contentType: "text/plain", contentStream: InputStream(data: Data("from a stream".utf8))), forKey: "stream")
            try c.save(doc)
            let digest = try c.storeBlobContent(Data("from a peer".utf8))
            _ = c.blobMD5(digest: digest)
        }
        func mode(_ path: String) throws -> Int { try #require(try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) }
        #expect(try mode(folder.path) == 0o700)
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(files.filter { $0.hasSuffix(".blob") }.count == 4)
        for file in files { #expect(try mode(folder.appendingPathComponent(file).path) == 0o600, "\(file)") }
        // A folder an older version made world-readable is closed when the database opens.
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        let again = try dir.open()
        try? again.close()
        #expect(try mode(folder.path) == 0o700)
    }

    @Test func blobsAreStoredOnceAndReadLazily() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let content = Data("hello blob".utf8)
        for id in ["a", "b"] {
            let doc = MutableDocument(id: id)
            doc.setBlob(Blob(contentType: "text/plain", data: content), forKey: "file")
            try c.save(doc)
        }
        #expect(try blobFiles(db).count == 1)
        let blob = try #require(try c.document(id: "a")?.blob(forKey: "file"))
        #expect(blob.content == content)
        #expect(blob.length == content.count)
        #expect(blob.contentType == "text/plain")
        #expect(blob.digest.hasPrefix("sha1-"))
        let stream = try #require(blob.contentStream())
        stream.open()
        var buffer = [UInt8](repeating: 0, count: 64)
        let n = stream.read(&buffer, maxLength: 64)
        stream.close()
        #expect(Data(buffer[0..<n]) == content)
        // The body holds only the metadata.
        let body = try #require(try c.document(id: "a")).toJSON()
        #expect(body == #"{"file":{"@type":"blob","content_type":"text/plain","digest":"\#(blob.digest)","length":10}}"#)
    }

    /// Rows written as read (whole documents as SQLite holds their text) say what the rows
    /// built from values say, blobs and nested ones included.
    @Test func queryRowsWrittenAsReadCarryBlobsAsBuiltOnesDo() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let doc = MutableDocument(id: "a")
        doc.setBlob(Blob(contentType: "text/plain", data: Data("hello blob".utf8)), forKey: "file")
        doc.setDocumentValue(["list": [1, 2.5, "é\u{1F600}", ["deep": .null]], "flag": true], forKey: "nested")
        try c.save(doc)
        try c.save(MutableDocument(id: "b", data: ["n": 1]))
        let query = try db.createQuery("SELECT *, meta().id, nested.list, file, missing, n AS twice, missing AS twice FROM _ ORDER BY meta().id")
        var streamed: [UInt8] = []
        try query.writeRowsJSON { streamed.append(contentsOf: $0) }
        let written = try DocumentValue(json: "[" + String(decoding: streamed, as: UTF8.self) + "]")
        let built = DocumentValue.array(try query.execute().map { try DocumentValue(json: $0.toJSON()) })
        #expect(written == built, "\(String(decoding: streamed, as: UTF8.self))")
        guard case .array(let rows) = written else { Issue.record("not an array: \(written)"); return }
        #expect(rows.count == 2)
    }

    @Test func blobsFromFilesAndStreamsInNestedValues() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let file = dir.url.appendingPathComponent("input.bin")
        let big = Data((0..<300_000).map { UInt8($0 % 251) })
        try big.write(to: file)
        let fromFile = try Blob(contentType: "application/octet-stream", fileURL: file)
        let fromStream = try Blob(contentType: "application/octet-stream", contentStream: InputStream(data: big))
        #expect(fromFile.digest == fromStream.digest)
        #expect(fromFile.digest == Blob(contentType: "x", data: big).digest)
        let doc = MutableDocument(id: "n")
        let list = MutableArray()
        try list.append(fromFile)
        doc.setArray(list, forKey: "files")
        try doc.setValue(["inner": fromStream], forKey: "dict")
        try c.save(doc)
        let read = try #require(try c.document(id: "n"))
        #expect(read.array(forKey: "files")?.blob(at: 0)?.content == big)
        #expect(read.dictionary(forKey: "dict")?.blob(forKey: "inner")?.content == big)
        #expect(try blobFiles(db).count == 1)
    }

    /// Opening a database removes a crash's leftover temporary files, but not one that another
    /// process may still be writing (an upload in progress).
    @Test func openingRemovesOnlyAbandonedTemporaryFiles() throws {
        let dir = try TempDirectory()
        try dir.open("t").close()
        let blobs = dir.url.appendingPathComponent("t.syncnode/blobs")
        let old = blobs.appendingPathComponent(".tmp-old"), fresh = blobs.appendingPathComponent(".tmp-fresh")
        for url in [old, fresh] { #expect(FileManager.default.createFile(atPath: url.path, contents: Data("x".utf8))) }
        try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(-7200)], ofItemAtPath: old.path)
        try dir.open("t").close()
        #expect(!FileManager.default.fileExists(atPath: old.path))
        #expect(FileManager.default.fileExists(atPath: fresh.path))
    }

    /// A batch's blobs keep their temporary names until the batch is placed, or until
    /// ``BlobBatch/lag`` later ones were finished; then each is in place under its digest with
    /// its MD5. One that vanished before then (swept by another process, say) fails the
    /// placing: the others are placed all the same, and no temporary file is left.
    @Test func aBatchOfBlobsIsPlacedTogether() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let folder = db.path.appendingPathComponent("blobs")
        func temporaryFiles() throws -> [String] {
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".tmp-") }
        }
        func write(_ text: String, into batch: BlobBatch, verify: (String, Int) throws -> Void = { _, _ in }) throws -> WrittenBlob {
            let writer = try c.blobWriter()
            try Array(text.utf8).withUnsafeBytes { try writer.append($0) }
            return try writer.finish(into: batch, verify: verify)
        }
        let batch = try c.blobBatch()
        let written = try (0..<BlobBatch.lag + 2).map { try write("blob \($0)", into: batch) }
        #expect(throws: StoreError.self) { try write("refused", into: batch) { _, _ in throw StoreError.invalidValue("no") } }
        // The oldest are placed on the batch's queue as later ones arrive: the last `lag` wait.
        #expect((BlobBatch.lag...BlobBatch.lag + 2).contains(try temporaryFiles().count))
        try batch.place()
        #expect(batch.isEmpty)
        for blob in written {
            #expect(c.blobFile(digest: blob.digest) != nil)
            #expect(c.blobMD5(digest: blob.digest) == blob.md5)
        }
        #expect(try temporaryFiles().isEmpty)

        let failing = try c.blobBatch()
        let first = try write("three", into: failing), gone = try write("four", into: failing), last = try write("five", into: failing)
        try FileManager.default.removeItem(at: gone.temp)
        #expect(throws: StoreError.self) { try failing.place() }
        #expect(c.blobFile(digest: first.digest) != nil && c.blobFile(digest: last.digest) != nil)
        #expect(c.blobFile(digest: gone.digest) == nil)
        #expect(try temporaryFiles().isEmpty)

        // One that fails on the queue (handed to it by the last of the later ones): placing the
        // batch says so.
        let queued = try c.blobBatch()
        let lost = try write("lost on the queue", into: queued)
        try FileManager.default.removeItem(at: lost.temp)
        var placed = try (0..<BlobBatch.lag).map { try write("later \($0)", into: queued).digest }
        // Once the queue has met the failure, the next blob's add says so; that blob, and the
        // one it hands the queue, are placed all the same.
        var refused = false
        for n in 0..<200 where !refused {
            placed.append(Blob.digest(of: Data("after \(n)".utf8)))
            do {
                _ = try write("after \(n)", into: queued)
                usleep(5_000)
            } catch {
                refused = true
            }
        }
        #expect(refused, "no add said the queue failed")
        #expect(throws: StoreError.self) { try queued.place() }
        #expect(placed.allSatisfy { c.blobFile(digest: $0) != nil })
        #expect(c.blobFile(digest: lost.digest) == nil)
        #expect(try temporaryFiles().isEmpty)
    }

    /// A blob read from one database and saved into another: its file is copied across.
    @Test func aBlobFromAnotherDatabaseIsCopiedAcross() throws {
        let dir = try TempDirectory()
        let a = try dir.open("a"), b = try dir.open("b")
        defer { try? a.close(); try? b.close() }
        let content = Data((0..<200_000).map { UInt8($0 % 251) })
        let doc = MutableDocument(id: "d")
        doc.setBlob(Blob(contentType: "application/octet-stream", data: content), forKey: "file")
        try a.defaultCollection().save(doc)
        let read = try #require(try a.defaultCollection().document(id: "d"))
        try b.defaultCollection().save(read.toMutable())
        #expect(try blobFiles(b).count == 1)
        #expect(try b.defaultCollection().document(id: "d")?.blob(forKey: "file")?.content == content)
    }

    @Test func compactionKeepsReferencedBlobsOnly() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let other = try db.createCollection(name: "other", scope: "s")
        let doc = MutableDocument(id: "d")
        doc.setBlob(Blob(contentType: "text/plain", data: Data("v1".utf8)), forKey: "att")
        try c.save(doc)
        let keep = MutableDocument(id: "k")
        keep.setBlob(Blob(contentType: "text/plain", data: Data("kept".utf8)), forKey: "att")
        try other.save(keep)
        doc.setBlob(Blob(contentType: "text/plain", data: Data("v2".utf8)), forKey: "att")
        try c.save(doc)
        #expect(try blobFiles(db).count == 3)

        // v1 is still referenced by the old revision's body until compaction drops it.
        try db.compact(blobGracePeriod: 0)
        #expect(try blobFiles(db).count == 2)
        #expect(try c.document(id: "d")?.blob(forKey: "att")?.content == Data("v2".utf8))
        #expect(try other.document(id: "k")?.blob(forKey: "att")?.content == Data("kept".utf8))
        #expect(try c.revision(id: "d")?.history.count == 2)

        try c.delete(id: "d")
        try db.compact(blobGracePeriod: 0)
        #expect(try blobFiles(db).count == 1)
        // A tombstone's ancestors' bodies are gone, its history is not.
        #expect(try c.revision(id: "d")?.history.count == 3)
        let integrity = try db.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") }
        #expect(integrity == "ok")
    }

    /// Compaction scans blob references without holding the writer: a save made after its scan
    /// that refers to a blob nothing else refers to keeps that blob.
    @Test func aBlobReferredToAgainDuringCompactionIsKept() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let doc = MutableDocument(id: "d")
        doc.setBlob(Blob(contentType: "text/plain", data: Data("v1".utf8)), forKey: "att")
        try c.save(doc)
        doc.removeValue(forKey: "att")
        try c.save(doc)
        try db.compact(blobGracePeriod: 0) { step in
            guard step == .collections(done: 1, of: 1) else { return }
            let again = MutableDocument(id: "again")
            again.setBlob(Blob(contentType: "text/plain", data: Data("v1".utf8)), forKey: "att")
            #expect(throws: Never.self) { try c.save(again) }
        }
        #expect(try c.document(id: "again")?.blob(forKey: "att")?.content == Data("v1".utf8))
        #expect(try blobFiles(db).count == 1)
    }

    @Test func spooledStreamContentIsRemovedWithTheBlob() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        var spool: URL?
        do {
            let blob = try Blob(contentType: "text/plain", contentStream: InputStream(data: Data("spooled".utf8)))
            if case .spooled(let url) = blob.source { spool = url }
            let doc = MutableDocument(id: "s")
            doc.setBlob(blob, forKey: "b")
            try db.defaultCollection().save(doc)
        }
        let url = try #require(spool)
        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(try db.defaultCollection().document(id: "s")?.blob(forKey: "b")?.content == Data("spooled".utf8))
    }

    @Test func freshUnreferencedBlobsSurviveCompaction() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        // Content stored ahead of the revision that will refer to it (as the sync layer does).
        try db.defaultCollection().storeBlobContent(Data("arriving".utf8))
        try db.compact()
        #expect(try blobFiles(db).count == 1)
        try db.compact(blobGracePeriod: 0)
        #expect(try blobFiles(db).count == 0)
    }

    /// By default a replaced revision's body goes at once, but for ancestors that hold blobs (a
    /// peer that has them is sent stubs); `keepsAncestorBodies` keeps every one until compaction.
    /// A losing leaf that gets a child (a resolved conflict) loses its body alike.
    @Test(arguments: [false, true]) func replacedBodiesAreKeptOnlyWhereNeeded(keeps: Bool) throws {
        let dir = try TempDirectory()
        let db = try Database(name: "db", config: DatabaseConfiguration(directory: dir.url, keepsAncestorBodies: keeps))
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let plain = MutableDocument(id: "plain", values: ["v": 1])
        try c.save(plain)
        let plainFirst = try #require(plain.revisionID)
        plain.setInt(2, forKey: "v")
        try c.save(plain)
        #expect(try c.revision(id: "plain", rev: plainFirst)?.body == (keeps ? #"{"v":1}"# : nil))
        #expect(try c.revision(id: "plain", rev: plain.revisionID)?.body == #"{"v":2}"#)

        let attached = MutableDocument(id: "attached")
        attached.setBlob(Blob(contentType: "text/plain", data: Data("content".utf8)), forKey: "file")
        try c.save(attached)
        let attachedFirst = try #require(attached.revisionID)
        attached.setInt(1, forKey: "n")
        try c.save(attached)
        #expect(try c.revision(id: "attached", rev: attachedFirst)?.body != nil)

        try c.insertRevision(id: "d", history: ["1-a"], deleted: false, body: ["v": 1])
        try c.insertRevision(id: "d", history: ["2-b", "1-a"], deleted: false, body: ["v": 2])
        try c.insertRevision(id: "d", history: ["2-c", "1-a"], deleted: false, body: ["v": 3])
        #expect(try c.revision(id: "d", rev: "2-b")?.body == #"{"v":2}"#, "a losing leaf keeps its body")
        try c.resolveConflict(id: "d", keeping: "2-c")
        #expect(try c.revision(id: "d", rev: "2-b")?.body == (keeps ? #"{"v":2}"# : nil))
        #expect(try c.revision(id: "d", rev: "2-c")?.body == #"{"v":3}"#)
        let stored = try db.read { try Int.fetchOne($0, sql: "SELECT count(*) FROM c1_revs") }
        // Kept: both first revisions, 1-a, 2-b and the tombstone on 2-b (a leaf); else the blob's and the tombstone's.
        #expect(stored == (keeps ? 5 : 2), "bodies in the revision table")
    }

    @Test func conflictLeafBodiesSurviveCompaction() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.insertRevision(id: "d", history: ["1-a"], deleted: false, body: ["v": 1])
        try c.insertRevision(id: "d", history: ["2-b", "1-a"], deleted: false, body: ["v": 2])
        try c.insertRevision(id: "d", history: ["2-c", "1-a"], deleted: false, body: ["v": 3])
        try db.compact(blobGracePeriod: 0)
        #expect(try c.revision(id: "d", rev: "2-b")?.body == #"{"v":2}"#)
        #expect(try c.revision(id: "d", rev: "1-a")?.body == nil)
    }
}
