import Foundation
import NIOHTTP1
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct ReplicatorTests {
    /// A local database to replicate with a harness's listener.
    final class Peer: @unchecked Sendable {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-peer-\(UUID().uuidString)")
        let db: Database
        let collection: DocumentCollection
        init() throws {
            db = try Database(name: "local", config: DatabaseConfiguration(directory: dir))
            collection = try db.defaultCollection()
        }
        deinit {
            try? db.close()
            try? FileManager.default.removeItem(at: dir)
        }
    }

    static func pairingURL(_ h: ListenerHarness, db: String = "db", password: String = ListenerHarness.password) throws -> URL {
        let base = try #require(URL(string: h.base + "/"))
        return PairingURL(base: base, database: db, user: ListenerHarness.user, password: password,
                          uuid: h.node.uuid, fingerprint: h.listener.tlsIdentity?.fingerprint).url
    }

    static func state(_ c: DocumentCollection) throws -> [String: [String]] {
        var out: [String: [String]] = [:]
        for change in try c.changes(since: 0, allLeaves: true) { out[change.id] = change.leafRevs }
        return out
    }

    @Test func pullThenPushThenNothingToDo() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<30 { try remote.save(try MutableDocument(id: "r\(i)", data: ["i": i])) }
            try remote.delete(id: "r0")
            let attached = MutableDocument(id: "att")
            attached.setBlob(Blob(contentType: "text/plain", data: Data("blob over the wire".utf8)), forKey: "file")
            try remote.save(attached)
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try Self.pairingURL(h)))
            config.batchSize = 7
            config.replicatorType = .pull
            let pulled = try await Replicator(config: config).runOnce()
            #expect(pulled == ReplicationResult(pushed: 0, pulled: 31))
            #expect(try Self.state(peer.collection) == Self.state(remote))
            #expect(try peer.collection.document(id: "att")?.blob(forKey: "file")?.content == Data("blob over the wire".utf8))
            #expect(try peer.collection.document(id: "r0") == nil)

            for i in 0..<5 { try peer.collection.save(try MutableDocument(id: "l\(i)", data: ["local": true])) }
            config.replicatorType = .pushAndPull
            let pushed = try await Replicator(config: config).runOnce()
            #expect(pushed == ReplicationResult(pushed: 5, pulled: 0))
            #expect(try remote.document(id: "l3")?.boolean(forKey: "local") == true)
            // Checkpoints: a re-run moves nothing.
            #expect(try await Replicator(config: config).runOnce() == ReplicationResult())
        }
    }

    @Test func conflictingEditsConvergeToOneWinner() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(try MutableDocument(id: "d", data: ["v": "base"]))
            let peer = try Peer()
            let config = ReplicatorConfiguration(collection: peer.collection, target: .url(try Self.pairingURL(h)))
            _ = try await Replicator(config: config).runOnce()
            // Both sides edit offline.
            let mine = try #require(try peer.collection.document(id: "d")).toMutable()
            mine.setString("local", forKey: "v")
            try peer.collection.save(mine)
            let theirs = try #require(try remote.document(id: "d")).toMutable()
            theirs.setString("remote", forKey: "v")
            try remote.save(theirs)
            theirs.setString("remote again", forKey: "v")
            try remote.save(theirs)
            let result = try await Replicator(config: config).runOnce()
            // Pulled: theirs (gen 3); pushed: the tombstone closing our losing branch (with its history).
            #expect(result.pulled == 1 && result.pushed == 1)
            #expect(try Self.state(peer.collection) == Self.state(remote), "the same revision tree on both nodes")
            let winner = try #require(try peer.collection.document(id: "d"))
            #expect(winner.string(forKey: "v") == "remote again")  // the higher generation wins (CBL's default)
            #expect(try remote.document(id: "d")?.revisionID == winner.revisionID)
            #expect(try peer.collection.conflictingRevisions(id: "d").isEmpty && remote.conflictingRevisions(id: "d").isEmpty)
            #expect(try await Replicator(config: config).runOnce() == ReplicationResult(), "nothing left to move")
        }
    }

    @Test func resumesByUUIDAfterThePeerMovesToAnotherPort() async throws {
        let first = try await ListenerHarness()
        let remote = try #require(try first.node.database("db", create: true)?.defaultCollection())
        for i in 0..<20 { try remote.save(try MutableDocument(id: "d\(i)", data: ["i": i])) }
        let peer = try Peer()
        var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try Self.pairingURL(first)))
        config.replicatorType = .pull
        #expect(try await Replicator(config: config).runOnce().pulled == 20)
        await first.shutdown(removeDirectory: false)

        // Same data directory, new port: the pairing URL differs only in the port.
        let second = try await ListenerHarness(directory: first.directory)
        try await withCleanup({ await second.shutdown() }) {
            #expect(second.base != first.base)
            let moved = try #require(try second.node.database("db")?.defaultCollection())
            try moved.save(try MutableDocument(id: "new", data: ["i": 99]))
            config = ReplicatorConfiguration(collection: peer.collection, target: .url(try Self.pairingURL(second)))
            config.replicatorType = .pull
            #expect(try await Replicator(config: config).runOnce().pulled == 1, "only the new document moves")
            // A remoteUUID override names a different peer: everything is examined again (but nothing is missing).
            config.remoteUUID = "some-other-identity"
            let renamed = Replicator(config: config)
            #expect(try await renamed.runOnce().pulled == 0)
            #expect(renamed.status.progress.completed >= 21, "a fresh checkpoint: every change examined again")
        }
    }

    @Test func wrongPinFailsFastAndBadCredentialsStop() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "secret"))
            let peer = try Peer()
            let other = try TLSIdentity.makeSelfSigned(commonName: "impostor")
            var url = URLComponents(url: try Self.pairingURL(h), resolvingAgainstBaseURL: false)
            url?.queryItems = [URLQueryItem(name: "fp", value: other.fingerprint)]
            let config = ReplicatorConfiguration(collection: peer.collection, target: .url(try #require(url?.url)))
            let before = h.listener.status
            do {
                _ = try await Replicator(config: config).runOnce()
                Issue.record("a wrong pin must fail")
            } catch let error as SyncError {
                #expect(error.description.contains(other.fingerprint) && error.description.contains(h.listener.tlsIdentity?.fingerprint ?? "?"))
            }
            // Failing fast, counted rather than timed: one handshake to see the certificate, no request, no retry.
            let after = h.listener.status
            #expect(after.totalRequests == before.totalRequests, "a request reached the peer with the wrong certificate")
            #expect(after.totalConnections == before.totalConnections + 1, "\(after.totalConnections - before.totalConnections) connections")
            #expect(try peer.collection.count == 0)

            let wrong = ReplicatorConfiguration(collection: peer.collection, target: .url(try Self.pairingURL(h, password: "nope")))
            await #expect(throws: CouchError.self) { _ = try await Replicator(config: wrong).runOnce() }
            #expect(try peer.collection.count == 0)
        }
    }

    /// Node A runs a newer app that writes more properties than node B's older model declares.
    /// B's save of its model, replicated back, loses none of them.
    @Test func anOlderModelOnAnotherNodeLosesNoField() async throws {
        struct OlderItem: Codable {
            @DocumentID var id: String? = nil
            var title: String
        }
        let a = try Peer(), b = try Peer()
        try a.collection.save(MutableDocument(id: "i", json: #"{"title":"first","priority":3,"details":{"color":"red","size":42}}"#))
        var config = ReplicatorConfiguration(collection: a.collection, target: .collection(b.collection))
        #expect(try await Replicator(config: config).runOnce().pushed == 1)

        var older = try #require(try b.collection.document(id: "i", as: OlderItem.self))
        older.title = "edited on the older node"
        try b.collection.save(from: older)
        config.replicatorType = .pull
        #expect(try await Replicator(config: config).runOnce().pulled == 1)

        let back = try #require(try a.collection.document(id: "i"))
        #expect(back.string(forKey: "title") == "edited on the older node")
        #expect(back.int(forKey: "priority") == 3)
        #expect(back.dictionary(forKey: "details")?.int(forKey: "size") == 42)
        #expect(try a.collection.document(id: "i")?.revisionID == (try b.collection.document(id: "i")?.revisionID))
    }

    @Test func localToLocalWithDocumentIDs() async throws {
        let a = try Peer(), b = try Peer()
        for id in ["x", "y", "z"] { try a.collection.save(MutableDocument(id: id)) }
        var config = ReplicatorConfiguration(collection: a.collection, target: .collection(b.collection))
        config.documentIDs = ["x", "z"]
        config.replicatorType = .push
        #expect(try await Replicator(config: config).runOnce().pushed == 2)
        #expect(try b.collection.document(id: "y") == nil && b.collection.document(id: "z") != nil)
    }
}

@Suite struct ReplicationEdgeTests {
    @Test func aDocumentTheStoreCannotHoldIsSkippedNotFatal() async throws {
        let peer = try ReplicatorTests.Peer()
        let local = LocalDatabase(collection: peer.collection)
        let refused = try await local.store([
            #"{"_id":"_design/app","_rev":"1-a","views":{}}"#,
            #"{"_id":"ok","_rev":"1-b","v":1}"#,
            #"{"_id":"bad","_rev":"not-a-rev"}"#,
        ].map { try WireRevision(json: $0) })
        #expect(refused.refused.count == 2 && refused.branched.isEmpty)
        #expect(try peer.collection.document(id: "ok")?.int(forKey: "v") == 1)
    }

    @Test func hostileRevisionHistoriesAndBadlyEncodedAttachmentsAreRefused() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let overflow = #"{"docs":[{"_id":"x","_rev":"1-a","_revisions":{"start":-9223372036854775808,"ids":["a","b"]}}],"new_edits":false}"#
            let reply = try await h.request(.POST, "/db/_bulk_docs", body: overflow)
            #expect(reply.status == 201 && reply.json.array?.first?["error"]?.string == "bad_request")
            #expect(try await h.request(.PUT, "/db/y", body: #"{"_revisions":{"start":1,"ids":["a","b"]},"_rev":"1-a"}"#).status == 400)
            // gzip (as CouchDB sends text attachments) is stored decoded; other encodings, corrupt data and
            // data that decodes to more than its declared length are refused, and nothing is stored.
            let gzip = #"{"_attachments":{"a.txt":{"content_type":"text/plain","encoding":"gzip","length":5,"data":"H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA=="}}}"#
            #expect(try await h.request(.PUT, "/db/z", body: gzip).status == 201)
            #expect(try await h.request(.GET, "/db/z/a.txt").body == "hello")
            // The sender's digest covers the gzip bytes; the one kept is the decoded content's.
            let signed = #"{"_attachments":{"a.txt":{"content_type":"text/plain","encoding":"gzip","digest":"md5-iMaiC8wqiFlD2NjLTemvCQ==","data":"H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA=="}}}"#
            #expect(try await h.request(.PUT, "/db/z1", body: signed).status == 201)
            #expect(try await h.request(.GET, "/db/z1")["_attachments"]?["a.txt"]?["digest"]?.string == "md5-XUFAKrxLKna5cZ2REBfFkg==")
            let brotli = #"{"_attachments":{"a.txt":{"content_type":"text/plain","encoding":"br","data":"aGVsbG8="}}}"#
            #expect(try await h.request(.PUT, "/db/z2", body: brotli).status == 415)
            let corrupt = #"{"_attachments":{"a.txt":{"content_type":"text/plain","encoding":"gzip","data":"H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAA"}}}"#
            #expect(try await h.request(.PUT, "/db/z3", body: corrupt).status == 400)
            let longer = #"{"_attachments":{"a.txt":{"content_type":"text/plain","encoding":"gzip","length":3,"data":"H4sIAAAAAAAAA8tIzcnJBwCGphA2BQAAAA=="}}}"#
            #expect(try await h.request(.PUT, "/db/z4", body: longer).status == 400)
            let wrongDigest = #"{"_attachments":{"a.txt":{"content_type":"text/plain","digest":"md5-AAAAAAAAAAAAAAAAAAAAAA==","data":"aGVsbG8="}}}"#
            #expect(try await h.request(.PUT, "/db/z5", body: wrongDigest).status == 400)
            for id in ["z2", "z3", "z4", "z5"] { #expect(try await h.request(.GET, "/db/\(id)").status == 404) }
            #expect(try await h.request(.GET, "/")["uuid"] != nil)
        }
    }
}

@Suite struct ContinuousReplicationTests {
    /// Waits for `condition`; the deadline is generous because the whole suite starts at once on
    /// two cores, and a node's first answers can take tens of seconds then (it returns at once when met).
    static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now.advanced(by: .seconds(60))
        while ContinuousClock.now < deadline {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(50))
        }
        return try condition()
    }

    @Test func writesOnEitherSideArriveWithoutPolling() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "before"))
            let peer = try ReplicatorTests.Peer()
            let config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            let replication = Task { try await Replicator(config: config).runContinuously() }
            #expect(try await Self.eventually { try peer.collection.document(id: "before") != nil })
            try remote.save(try MutableDocument(id: "remote-write", data: ["v": 1]))
            #expect(try await Self.eventually { try peer.collection.document(id: "remote-write") != nil })
            try peer.collection.save(try MutableDocument(id: "local-write", data: ["v": 2]))
            #expect(try await Self.eventually { try remote.document(id: "local-write") != nil })
            // Cancelling ends it (a replication that ignored it would run on: checked, with a generous deadline).
            let ended = Shared(false)
            Task {
                _ = try? await replication.value
                ended.withLock { $0 = true }
            }
            replication.cancel()
            #expect(try await Self.eventually { ended.withLock { $0 } }, "the continuous replication did not end when cancelled")
        }
    }
}
