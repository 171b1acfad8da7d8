import Foundation
import Testing
@testable import SyncNodeStore

@Suite struct SaveTests {
    @Test func failOnConflictThrowsAndKeepsTheStoredRevision() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(try MutableDocument(id: "d", data: ["v": 0]))
        let a = try #require(try c.document(id: "d")).toMutable()
        let b = try #require(try c.document(id: "d")).toMutable()
        a.setInt(1, forKey: "v")
        try c.save(a, concurrencyControl: .failOnConflict)
        b.setInt(2, forKey: "v")
        #expect(throws: StoreError.conflict(documentID: "d")) { try c.save(b, concurrencyControl: .failOnConflict) }
        #expect(try c.document(id: "d")?.int(forKey: "v") == 1)
        // Last write wins overwrites, as a child of the current revision (no conflict branch).
        try c.save(b, concurrencyControl: .lastWriteWins)
        #expect(try c.document(id: "d")?.int(forKey: "v") == 2)
        #expect(try c.document(id: "d")?.generation == 3)
        #expect(try c.conflictingRevisions(id: "d").isEmpty)
        // A new document over an existing one conflicts too.
        #expect(throws: StoreError.conflict(documentID: "d")) {
            try c.save(MutableDocument(id: "d"), concurrencyControl: .failOnConflict)
        }
    }

    @Test func conflictHandlerMergesOrGivesUp() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(try MutableDocument(id: "d", data: ["likes": 1, "tags": ["a"]]))
        let stale = try #require(try c.document(id: "d")).toMutable()
        let fresh = try #require(try c.document(id: "d")).toMutable()
        fresh.setInt(5, forKey: "likes")
        try c.save(fresh)

        stale.setString("mine", forKey: "note")
        var calls = 0
        let saved = try c.save(stale) { mine, theirs in
            calls += 1
            mine.setInt(theirs?.int(forKey: "likes") ?? 0, forKey: "likes")
            return true
        }
        #expect(saved && calls == 1)
        let merged = try #require(try c.document(id: "d"))
        #expect(merged.int(forKey: "likes") == 5)
        #expect(merged.string(forKey: "note") == "mine")

        let another = try MutableDocument(id: "d", data: ["x": 1])
        #expect(try c.save(another) { _, _ in false } == false)
        #expect(try c.document(id: "d")?.revisionID == merged.revisionID)
        // No conflict: the handler is not called.
        let current = try #require(try c.document(id: "d")).toMutable()
        #expect(try c.save(current) { _, _ in Issue.record("handler called"); return false })
    }

    @Test func deleteLeavesATombstonePurgeLeavesNothing() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(MutableDocument(id: "del"))
        try c.save(MutableDocument(id: "pur"))
        try c.delete(id: "del")
        try c.purge(id: "pur")
        #expect(try c.document(id: "del") == nil)
        #expect(try c.document(id: "pur") == nil)
        #expect(try c.count == 0)
        let tombstone = try #require(try c.revision(id: "del"))
        #expect(tombstone.deleted && tombstone.rev.hasPrefix("2-"))
        #expect(try c.revision(id: "pur") == nil)
        let feed = try c.changes(since: 0)
        #expect(feed.map(\.id) == ["del"])
        #expect(feed[0].deleted)
        #expect(throws: StoreError.self) { try c.purge(id: "pur") }
        #expect(throws: StoreError.self) { try c.delete(id: "pur") }
        // Recreating a deleted document continues its history.
        try c.save(MutableDocument(id: "del"))
        #expect(try c.document(id: "del")?.generation == 3)
    }

    @Test func deleteWithFailOnConflict() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(MutableDocument(id: "d"))
        let old = try #require(try c.document(id: "d"))
        try c.save(old.toMutable())
        #expect(throws: StoreError.conflict(documentID: "d")) { try c.delete(old, concurrencyControl: .failOnConflict) }
        try c.delete(old, concurrencyControl: .lastWriteWins)
        #expect(try c.document(id: "d") == nil)
    }

    @Test func sequencesIncreaseAndSurvivePurges() throws {
        let dir = try TempDirectory()
        var db = try dir.open()
        var c = try db.defaultCollection()
        for i in 0..<3 { try c.save(MutableDocument(id: "d\(i)")) }
        try c.purge(id: "d2")
        try db.close()
        db = try dir.open()
        defer { try? db.close() }
        c = try db.defaultCollection()
        let doc = MutableDocument(id: "new")
        try c.save(doc)
        // d2's 3 is never reused; the purge itself took 4 (update_seq moves, as in CouchDB).
        #expect(doc.sequence == 5)
        #expect(try c.lastSequence() == 5)
        #expect(try c.changes(since: 1).map(\.sequence) == [2, 5])
        #expect(try c.changes(since: 0, limit: 1).map(\.id) == ["d0"])
    }

    /// A new document's save writes without reading its row first. When the ID turns out to be
    /// taken, the save must behave as one that had read it: over a live document, a conflict or
    /// a child revision; over a tombstone, the next generation. No sequence may be skipped, in a
    /// batch (where the sequence handed back is the batch's last) or alone.
    @Test(arguments: [true, false]) func aNewDocumentOverATakenIDIsSavedAsBefore(inBatch: Bool) throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(MutableDocument(id: "live", values: ["v": 1]))
        try c.save(MutableDocument(id: "gone", values: ["v": 1]))
        try c.delete(#require(try c.document(id: "gone")))
        #expect(try c.lastSequence() == 3)

        var saved: [MutableDocument] = []
        let work = {
            #expect(throws: StoreError.conflict(documentID: "live")) {
                try c.save(MutableDocument(id: "live", values: ["v": 2]), concurrencyControl: .failOnConflict)
            }
            for id in ["live", "gone", "fresh"] {
                let doc = MutableDocument(id: id, values: ["v": 3])
                try c.save(doc)
                saved.append(doc)
            }
        }
        if inBatch { try db.inBatch(work) } else { try work() }

        #expect(saved.map(\.sequence) == [4, 5, 6])
        #expect(try c.lastSequence() == 6)
        #expect(try c.changes(since: 3).map(\.id) == ["live", "gone", "fresh"])
        #expect(try c.document(id: "live")?.generation == 2)
        #expect(try c.document(id: "gone")?.generation == 3)
        #expect(try c.document(id: "fresh")?.generation == 1)
        #expect(try ["live", "gone", "fresh"].map { try c.document(id: $0)?.int(forKey: "v") } == [3, 3, 3])
        #expect(try c.conflictingRevisions(id: "live").isEmpty)
        #expect(try c.count == 3)
    }

    @Test func batchCommitsAtomicallyAndNotifiesAfterCommit() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let changes = Collector<[String]>()
        let token = c.addChangeListener { changes.append($0.documentIDs) }
        defer { token.remove() }

        struct Boom: Error {}
        #expect(throws: Boom.self) {
            try db.inBatch {
                try c.save(MutableDocument(id: "a"))
                // Reads inside the batch see its writes.
                #expect(try c.document(id: "a") != nil)
                try c.save(MutableDocument(id: "b"))
                throw Boom()
            }
        }
        #expect(try c.document(id: "a") == nil)
        #expect(try c.count == 0)

        try db.inBatch {
            try c.save(MutableDocument(id: "x"))
            try c.save(MutableDocument(id: "y"))
            try c.save(MutableDocument(id: "x"))
        }
        try c.save(MutableDocument(id: "z"))
        let received = await changes.wait(count: 2)
        // The rolled-back batch was never announced; each commit is one notification, in order.
        #expect(received == [["x", "y"], ["z"]])
    }

    @Test func documentListenerAndAsyncSequence() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let seen = Collector<String>()
        let token = c.addDocumentChangeListener(id: "watched") { seen.append($0.documentID) }
        // The stream lives only in the consumer task, so it ends with it.
        let consumer: Task<[[String]], Never> = {
            let stream = c.changes()
            return Task {
            var out: [[String]] = []
            for await change in stream {
                out.append(change.documentIDs)
                if out.count == 3 { break }
            }
            return out
            }
        }()
        try c.save(MutableDocument(id: "other"))
        try c.save(MutableDocument(id: "watched"))
        try c.delete(id: "watched")
        #expect(await consumer.value == [["other"], ["watched"], ["watched"]])
        #expect(await seen.wait(count: 2) == ["watched", "watched"])
        token.remove()
        try c.save(MutableDocument(id: "watched"))
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.values.count == 2)
        // The stream's listener went away with the consumer.
        let deadline = Date().addingTimeInterval(2)
        while db.notifier.listenerCount > 0, Date() < deadline { try await Task.sleep(for: .milliseconds(5)) }
        #expect(db.notifier.listenerCount == 0)
    }

    @Test func listenersDeliverOnTheGivenQueue() async throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let queue = DispatchQueue(label: "test.queue")
        let key = DispatchSpecificKey<Int>()
        queue.setSpecific(key: key, value: 7)
        let onQueue = Collector<Int?>()
        let token = c.addChangeListener(queue: queue) { _ in onQueue.append(DispatchQueue.getSpecific(key: key)) }
        defer { token.remove() }
        try c.save(MutableDocument())
        #expect(await onQueue.wait(count: 1) == [7])
    }

    @Test func expiredDocumentsArePurged() async throws {
        let dir = try TempDirectory()
        var db = try dir.open()
        var c = try db.defaultCollection()
        try c.save(MutableDocument(id: "soon"))
        try c.save(MutableDocument(id: "later"))
        try c.save(MutableDocument(id: "kept"))
        let purged = Collector<[String]>()
        let token = c.addChangeListener { purged.append($0.documentIDs) }
        try c.setDocumentExpiration(id: "soon", expiration: Date().addingTimeInterval(0.2))
        #expect(try c.getDocumentExpiration(id: "soon") != nil)
        #expect(throws: StoreError.self) { try c.setDocumentExpiration(id: "missing", expiration: Date()) }

        #expect(await purged.wait(count: 1) == [["soon"]])
        #expect(try c.revision(id: "soon") == nil)
        #expect(try c.document(id: "later") != nil)
        token.remove()

        // Closed while "later" expires: opening catches up.
        let laterDate = Date().addingTimeInterval(0.3)
        try c.setDocumentExpiration(id: "later", expiration: laterDate)
        try db.close()
        try await Task.sleep(for: .seconds(max(0, laterDate.timeIntervalSinceNow) + 0.1))
        db = try dir.open()
        defer { try? db.close() }
        c = try db.defaultCollection()
        let deadline = Date().addingTimeInterval(5)
        while try c.revision(id: "later") != nil, Date() < deadline { try await Task.sleep(for: .milliseconds(10)) }
        #expect(try c.revision(id: "later") == nil)
        #expect(try c.document(id: "kept") != nil)
    }

    @Test func localDocumentsHaveTheirOwnRevisions() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let first = try c.putLocalDocument(id: "cp", json: #"{"seq": 5, "_rev": "kept verbatim"}"#, rev: nil)
        #expect(first.rev == "0-1")
        #expect(throws: StoreError.self) { try c.putLocalDocument(id: "cp", json: "{}", rev: nil) }
        #expect(throws: StoreError.self) { try c.putLocalDocument(id: "cp", json: "{}", rev: "0-9") }
        let second = try c.putLocalDocument(id: "cp", json: #"{"seq": 6}"#, rev: "0-1")
        #expect(second.rev == "0-2")
        #expect(try c.localDocument(id: "cp")?.body == #"{"seq": 6}"#)
        #expect(throws: StoreError.self) { try c.putLocalDocument(id: "bad", json: "[1]", rev: nil) }
        // Local documents are not documents: no changes, no count.
        #expect(try c.changes(since: 0).isEmpty)
        try c.deleteLocalDocument(id: "cp", rev: "0-2")
        #expect(try c.localDocument(id: "cp") == nil)
    }
}

/// Inside a batch, a save right after a read of its document uses the row that read kept; a
/// change in between (a save of another copy, of another document, a purge) reads it again.
@Suite struct KeptRowTests {
    @Test func aSaveAfterAReadInABatchSeesEveryChangeInBetween() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.save(MutableDocument(id: "a", values: ["v": 0]))
        try c.save(MutableDocument(id: "b", values: ["v": 0]))
        try db.inBatch {
            let first = try #require(try c.document(id: "a")).toMutable()
            first.setInt(1, forKey: "v")
            try c.save(first, concurrencyControl: .failOnConflict)
            #expect(first.revisionID?.hasPrefix("2-") == true)

            // Two copies read; the later one is saved first: the earlier one's save must see it.
            let stale = try #require(try c.document(id: "a")).toMutable()
            let fresh = try #require(try c.document(id: "a")).toMutable()
            fresh.setInt(2, forKey: "v")
            try c.save(fresh, concurrencyControl: .failOnConflict)
            stale.setInt(3, forKey: "v")
            #expect(throws: StoreError.conflict(documentID: "a")) { try c.save(stale, concurrencyControl: .failOnConflict) }

            // A read of a, a purge of a (which reads no row), then a save of the copy: a is gone, so
            // the save makes a new document rather than a child of the purged row.
            let b = try #require(try c.document(id: "b")).toMutable()
            let again = try #require(try c.document(id: "a")).toMutable()
            try c.purge(id: "a")
            again.setInt(4, forKey: "v")
            try c.save(again)
            b.setInt(1, forKey: "v")
            try c.save(b, concurrencyControl: .failOnConflict)
        }
        #expect(try c.document(id: "a")?.revisionID?.hasPrefix("1-") == true)
        #expect(try c.document(id: "a")?.int(forKey: "v") == 4)
        #expect(try c.document(id: "b")?.revisionID?.hasPrefix("2-") == true)
        #expect(try c.leafDocuments(id: "a").count == 1)
        // Outside a batch nothing is kept: a read, another writer's save, then a save conflicts.
        let outside = try #require(try c.document(id: "b")).toMutable()
        let other = try dir.open()
        defer { try? other.close() }
        let theirs = try #require(try other.defaultCollection().document(id: "b")).toMutable()
        theirs.setInt(9, forKey: "v")
        try other.defaultCollection().save(theirs)
        outside.setInt(5, forKey: "v")
        #expect(throws: StoreError.conflict(documentID: "b")) { try c.save(outside, concurrencyControl: .failOnConflict) }
    }
}

@Suite struct ExternalChangeTests {
    /// Another process (here: another connection to the same files) writes;
    /// this process's listeners hear of it, also when an own commit comes right
    /// after (before the watcher's next poll): its sequences do not follow what
    /// the watcher had seen, so they must not hide the other's.
    @Test(arguments: [true, false]) func commitsByAnotherWriterReachListeners(ownFirst: Bool) async throws {
        let dir = try TempDirectory()
        let mine = try dir.open()
        let other = try dir.open()
        defer { try? mine.close(); try? other.close() }
        let heard = Collector<[String]>()
        let token = try mine.defaultCollection().addChangeListener { heard.append($0.documentIDs) }
        defer { token.remove() }
        if ownFirst { try mine.defaultCollection().save(MutableDocument(id: "own")) }
        try other.defaultCollection().save(MutableDocument(id: "external"))
        if !ownFirst { try mine.defaultCollection().save(MutableDocument(id: "own")) }
        try await eventually { heard.values.joined().contains("external") }
        #expect(heard.values.joined().contains("external"), "\(heard.values)")
        if ownFirst { #expect(heard.values.first == ["own"], "in-process commits are told directly: \(heard.values)") }
        #expect(heard.values.joined().filter { $0 == "external" }.count == 1, "\(heard.values)")
    }

    #if os(Linux)
    /// An idle database costs no wakeups: the watcher reads the counters only after a write.
    @Test func anIdleDatabaseIsNotPolled() async throws {
        let dir = try TempDirectory()
        let mine = try dir.open()
        let other = try dir.open()
        defer { try? mine.close(); try? other.close() }
        try await Task.sleep(for: .milliseconds(600))  // two polls' worth of the old quarter-second timer
        #expect(mine.externalChanges.polls == 0)
        try other.defaultCollection().save(MutableDocument(id: "wake"))
        try await eventually { mine.externalChanges.polls > 0 }
        #expect(mine.externalChanges.polls >= 1)
    }

    /// Bulk writes stop the watch (each page written would wake it), overlapping ones until the
    /// last ends; a commit another process made meanwhile is announced once they end, and the
    /// log is checkpointed empty.
    @Test func bulkWritesPauseTheWatchAndCatchUpAfter() async throws {
        let dir = try TempDirectory()
        let mine = try dir.open()
        let other = try dir.open()
        defer { try? mine.close(); try? other.close() }
        let heard = Collector<[String]>()
        let token = try mine.defaultCollection().addChangeListener { heard.append($0.documentIDs) }
        defer { token.remove() }
        let collection = try mine.defaultCollection()
        try await mine.withBulkWrites {
            try mine.withBulkWrites {
                try mine.inBatch { for i in 0..<500 { try collection.save(MutableDocument(id: "bulk-\(i)")) } }
            }
            // The inner call has ended; the outer one still writes.
            let polls = mine.externalChanges.polls
            try other.defaultCollection().save(MutableDocument(id: "external"))
            try await Task.sleep(for: .milliseconds(400))
            #expect(mine.externalChanges.polls == polls, "the watch woke during bulk writes")
            let heardEarly = heard.values.joined().contains("external")
            #expect(!heardEarly, "announced before the bulk writes ended")
        }
        try await eventually { heard.values.joined().contains("external") }
        #expect(heard.values.joined().filter { $0 == "external" }.count == 1, "\(heard.values.suffix(3))")
        let wal = mine.path.appendingPathComponent("db.sqlite3-wal").path
        #expect(((try? FileManager.default.attributesOfItem(atPath: wal))?[.size] as? Int) == 0)
        // Watching again: a later external commit is heard as before.
        try other.defaultCollection().save(MutableDocument(id: "later"))
        try await eventually { heard.values.joined().contains("later") }
        #expect(heard.values.joined().contains("later"))
    }

    /// A user may hold 128 inotify instances in all; a node with more databases than
    /// that must not fall back to polling for the rest (one instance serves the process).
    @Test func moreDatabasesThanInotifyInstancesStayUnpolled() async throws {
        let dir = try TempDirectory()
        let databases = try (0..<140).map { try dir.open("db\($0)") }
        defer { for db in databases { try? db.close() } }
        try await Task.sleep(for: .milliseconds(600))
        #expect(databases.map(\.externalChanges.polls).reduce(0, +) == 0)
        let last = try #require(databases.last)
        let other = try dir.open("db139")
        defer { try? other.close() }
        let heard = Collector<[String]>()
        let token = try last.defaultCollection().addChangeListener { heard.append($0.documentIDs) }
        defer { token.remove() }
        try other.defaultCollection().save(MutableDocument(id: "external"))
        try await eventually { heard.values.joined().contains("external") }
        #expect(heard.values.joined().contains("external"))
    }
    #endif
}
