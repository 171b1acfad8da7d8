import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Conflict resolution, filters, attachments, status and faults, against a
/// listener over loopback HTTPS with auth.
@Suite struct ReplicatorBehaviourTests {
    typealias Peer = ReplicatorTests.Peer

    /// Document "d" replicated to a fresh peer: edit it on both sides next.
    static func syncedDocument(_ h: ListenerHarness) async throws -> (Peer, DocumentCollection, ReplicatorConfiguration) {
        let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
        try remote.save(try MutableDocument(id: "d", data: ["likes": 1, "v": "base"]))
        let peer = try Peer()
        let config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
        _ = try await Replicator(config: config).runOnce()
        return (peer, remote, config)
    }

    @Test func aRemoteDeletionWinsOverALocalEdit() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let (peer, remote, config) = try await Self.syncedDocument(h)
            try peer.collection.save(try #require(try peer.collection.document(id: "d")).toMutable().then { $0.setInt(5, forKey: "likes") })
            try peer.collection.save(try #require(try peer.collection.document(id: "d")).toMutable().then { $0.setInt(6, forKey: "likes") })
            try remote.delete(id: "d")
            _ = try await Replicator(config: config).runOnce()
            #expect(try peer.collection.document(id: "d") == nil, "deletion wins, even over a longer branch")
            #expect(try remote.document(id: "d") == nil)
            #expect(try ReplicatorTests.state(peer.collection) == ReplicatorTests.state(remote))
        }
    }

    @Test func aCustomResolversMergeReplicates() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let (peer, remote, baseConfig) = try await Self.syncedDocument(h)
            try peer.collection.save(try #require(try peer.collection.document(id: "d")).toMutable().then { $0.setInt(3, forKey: "likes") })
            try remote.save(try #require(try remote.document(id: "d")).toMutable().then { $0.setInt(10, forKey: "likes") })
            var config = baseConfig
            let calls = Collector<String>()
            config.conflictResolver = ConflictResolver { conflict in
                calls.append(conflict.documentID)
                guard let local = conflict.localDocument, let remote = conflict.remoteDocument else { return .delete }
                let merged = remote.toMutable()
                merged.setInt(local.int(forKey: "likes") + remote.int(forKey: "likes"), forKey: "likes")
                return .merge(merged)
            }
            _ = try await Replicator(config: config).runOnce()
            #expect(calls.values == ["d"])
            #expect(try peer.collection.document(id: "d")?.int(forKey: "likes") == 13)
            #expect(try remote.document(id: "d")?.int(forKey: "likes") == 13, "the merge was pushed")
            #expect(try remote.conflictingRevisions(id: "d").isEmpty)
            #expect(try ReplicatorTests.state(peer.collection) == ReplicatorTests.state(remote))
        }
    }

    @Test func filtersDecidePerDocument() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<10 { try remote.save(try MutableDocument(id: "r\(i)", data: ["public": i % 2 == 0])) }
            let peer = try Peer()
            for i in 0..<6 { try peer.collection.save(try MutableDocument(id: "l\(i)", data: ["draft": i < 2])) }
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.pullFilter = { doc, _ in doc.boolean(forKey: "public") }
            config.pushFilter = { doc, flags in flags.contains(.deleted) || !doc.boolean(forKey: "draft") }
            let replicator = Replicator(config: config)
            #expect(try await replicator.pendingDocumentIDs() == ["l2", "l3", "l4", "l5"])
            #expect(try await replicator.runOnce() == ReplicationResult(pushed: 4, pulled: 5))
            #expect(try await replicator.pendingDocumentIDs().isEmpty)
            #expect(try peer.collection.document(id: "r1") == nil && peer.collection.document(id: "r2") != nil)
            #expect(try remote.document(id: "l0") == nil && remote.document(id: "l5") != nil)
            try peer.collection.delete(id: "l5")
            #expect(try await replicator.isDocumentPending(id: "l5"))
            #expect(try await replicator.runOnce().pushed == 1, "deletions pass this push filter")
            #expect(try remote.document(id: "l5") == nil)
        }
    }

    @Test func anUnchangedAttachmentIsSentOnce() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let content = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            let doc = MutableDocument(id: "photo")
            doc.setBlob(Blob(contentType: "application/octet-stream", data: content), forKey: "image")
            doc.setInt(1, forKey: "version")
            try remote.save(doc)
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            var before = h.listener.status.bytesSent
            #expect(try await Replicator(config: config).runOnce().pulled == 1)
            let first = h.listener.status.bytesSent - before
            #expect(first > 300_000 && first < 320_000, "300 KB should cross as raw bytes, not base64: \(first) bytes")

            // A new revision with the same blob: only the changed property travels.
            try remote.save(try #require(try remote.document(id: "photo")).toMutable().then { $0.setInt(2, forKey: "version") })
            before = h.listener.status.bytesSent
            #expect(try await Replicator(config: config).runOnce().pulled == 1)
            let second = h.listener.status.bytesSent - before
            #expect(second < 20_000, "the attachment was sent again: \(second) bytes")
            let pulled = try #require(try peer.collection.document(id: "photo"))
            #expect(pulled.int(forKey: "version") == 2 && pulled.blob(forKey: "image")?.content == content)

            // Push the same way: a local edit keeps the blob, the listener gets a stub.
            try peer.collection.save(pulled.toMutable().then { $0.setInt(3, forKey: "version") })
            config.replicatorType = .push
            #expect(try await Replicator(config: config).runOnce().pushed == 1)
            #expect(try remote.document(id: "photo")?.blob(forKey: "image")?.content == content)
            #expect(try remote.document(id: "photo")?.int(forKey: "version") == 3)
        }
    }

    @Test func statusListenersAndAsyncSequencesReportActivityAndProgress() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<25 { try remote.save(try MutableDocument(id: "r\(i)", data: ["i": i])) }
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.batchSize = 10
            let replicator = Replicator(config: config)
            #expect(replicator.status.activity == .stopped)
            let changes = Collector<ReplicatorStatus>()
            let documents = Collector<DocumentReplication>()
            let t1 = replicator.addChangeListener { changes.append($0.status) }
            let t2 = replicator.addDocumentReplicationListener { documents.append($0) }
            defer { t1.remove(); t2.remove() }
            let statusChanges = replicator.statusChanges()  // registered now, before the start
            let stream = Task { () -> [ReplicatorActivity] in
                var seen: [ReplicatorActivity] = []
                for await change in statusChanges {
                    seen.append(change.status.activity)
                    if change.status.activity == .stopped { break }
                }
                return seen
            }
            replicator.start()
            await replicator.waitUntilStopped()
            let final = replicator.status
            #expect(final.activity == .stopped && final.error == nil)
            #expect(final.result == ReplicationResult(pushed: 0, pulled: 25))
            #expect(final.progress.completed == final.progress.total && final.progress.total >= 25)
            let activities = await stream.value
            #expect(activities.first == .connecting && activities.contains(.busy) && activities.last == .stopped)
            let all = await changes.wait(count: activities.count)
            #expect(all.map(\.progress.completed) == all.map(\.progress.completed).sorted(), "progress never goes back")
            let pulledIDs = await documents.wait(count: 3).filter { !$0.isPush }.flatMap { $0.documents.map(\.id) }
            #expect(Set(pulledIDs) == Set((0..<25).map { "r\($0)" }))
        }
    }

    @Test func serviceUnavailableIsRetriedAndUnauthorizedStops() async throws {
        let failures = Shared(3)
        let h = try await ListenerHarness(faultInjector: FaultInjector { _, path in
            guard path.hasSuffix("/_bulk_get") else { return nil }
            return failures.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0 ? 503 : nil
            }
        })
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<5 { try remote.save(MutableDocument(id: "r\(i)")) }
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            config.maxAttemptWaitTime = .milliseconds(300)
            let offline = Collector<ReplicatorActivity>()
            let replicator = Replicator(config: config)
            let token = replicator.addChangeListener { if $0.status.activity == .offline { offline.append(.offline) } }
            defer { token.remove() }
            #expect(try await replicator.runOnce().pulled == 5, "completed after three 503 answers")
            // Waits that end as soon as the events come: long enough for a loaded CI run.
            #expect(await offline.wait(count: 3, timeout: .seconds(30)).count == 3)

            // Always 503 with few attempts: the status keeps the HTTP status.
            failures.withLock { $0 = 1000 }
            try remote.save(MutableDocument(id: "late"))
            config.maxAttempts = 2
            let giving = Replicator(config: config)
            await #expect(throws: CouchError.self) { try await giving.runOnce() }
            #expect((giving.status.error as? CouchError)?.status == 503)

            // Continuous and retrying it: stopped on request, it keeps no error (it was not what stopped it).
            var retrying = config
            retrying.continuous = true
            let continuous = Replicator(config: retrying)
            let seen = Collector<Int>()
            let watch = continuous.addChangeListener { if ($0.status.error as? CouchError)?.status == 503 { seen.append(503) } }
            defer { watch.remove() }
            continuous.start()
            #expect(await seen.wait(count: 1, timeout: .seconds(30)).count == 1)
            continuous.stop()
            await continuous.waitUntilStopped()
            #expect(continuous.status.activity == .stopped && continuous.status.error == nil, "\(String(describing: continuous.status.error))")

            // Wrong password: stopped at once, 401 kept, continuous or not.
            var wrong = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h, password: "nope")))
            wrong.continuous = true
            let refused = Replicator(config: wrong)
            refused.start()
            await refused.waitUntilStopped()
            #expect(refused.status.activity == .stopped)
            #expect((refused.status.error as? CouchError)?.status == 401)
        }
    }

    /// A sync check asks a SyncNode peer once (its digest, with the changes it has after the
    /// pull position) and gets what the two separate questions get.
    @Test func aSyncCheckAsksANodeOnce() async throws {
        let deaf = Shared(false), asked = Shared<[String]>([]), polling = Shared(false)
        let h = try await ListenerHarness(faultInjector: FaultInjector({ _, path in
            for name in ["_digest", "_changes"] where path.hasSuffix("/" + name) { asked.withLock { $0.append(name) } }
            return nil
        }, deafFeeds: {
            // Asked by a waiting long poll, at least once a second.
            polling.withLock { $0 = true }
            return deaf.withLock { $0 }
        }))
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<3 { try remote.save(MutableDocument(id: "r\(i)")) }
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            config.continuous = true
            let replicator = Replicator(config: config)
            replicator.start()
            #expect(try await ContinuousReplicationTests.eventually { try peer.collection.count == 3 && replicator.status.activity == .idle })
            // Five changes its (now deaf) long poll does not hear of. The poll is waiting (its
            // request came before what is counted).
            deaf.withLock { $0 = true }
            for i in 3..<8 { try remote.save(MutableDocument(id: "r\(i)")) }
            polling.withLock { $0 = false }
            #expect(try await ContinuousReplicationTests.eventually { polling.withLock { $0 } })
            asked.withLock { $0 = [] }
            let check = try await replicator.syncCheck()
            #expect(asked.withLock { $0 } == ["_digest"])
            #expect(check.pending.pull == 5 && check.pending.push == nil && check.digestsMatch == false)
            #expect(try await replicator.pendingChanges() == check.pending)
            #expect(try await replicator.digestsMatch() == check.digestsMatch)
            replicator.stop()
            await replicator.waitUntilStopped()
        }
    }

    /// A continuous pass that finds only what this side has saves no checkpoint (a mesh's pulls
    /// woken by a revision that reached the peer from elsewhere), yet counts it as examined: the
    /// replicator reads as in sync. The next pass that writes saves past both.
    @Test func aPassThatWroteNothingSavesNoCheckpoint() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "first"))
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            config.continuous = true
            let replicator = Replicator(config: config)
            replicator.start()
            func checkpointRev() throws -> String? { try remote.localDocuments().first?.rev }
            #expect(try await ContinuousReplicationTests.eventually { try peer.collection.count == 1 && replicator.status.activity == .idle && checkpointRev() != nil })
            let saved = try checkpointRev()
            // The peer receives a revision this side holds already.
            try peer.collection.save(try MutableDocument(id: "both", data: ["v": 1]))
            let rev = try #require(try peer.collection.document(id: "both")?.revisionID)
            let body = #"{"new_edits":false,"docs":[{"_id":"both","_rev":"\#(rev)","v":1}]}"#
            let stored = try await h.request(.POST, "/db/_bulk_docs", body: body)
            #expect(stored.status == 201, "\(stored.status) \(stored.body)")
            #expect(try await ListenerAdminTests.eventually {
                guard replicator.status.activity == .idle, try remote.document(id: "both") != nil else { return false }
                let pending = try? await replicator.pendingChanges()
                return pending?.pull == 0
            })
            #expect(try checkpointRev() == saved, "a pass that wrote nothing saved a checkpoint")
            // A write on the peer is pulled, and its checkpoint covers the change before it.
            try remote.save(MutableDocument(id: "last"))
            #expect(try await ContinuousReplicationTests.eventually { try peer.collection.document(id: "last") != nil && checkpointRev() != saved })
            replicator.stop()
            await replicator.waitUntilStopped()
            let sequence = try #require(try remote.changes(since: 0, allLeaves: true).map(\.sequence).max())
            guard case .dictionary(let json) = try DocumentValue(json: try #require(try remote.localDocuments().first?.body)) else {
                Issue.record("the checkpoint is not a JSON object")
                return
            }
            #expect(ReplicationCheckpoint(json: json).sourceLastSequence == "\(sequence)")
        }
    }

    /// With the peer's uuid in its pairing URL, what a push would send is known offline.
    @Test func pendingDocumentsAreKnownWithoutThePeer() async throws {
        let peer = try Peer()
        for id in ["a", "b"] { try peer.collection.save(MutableDocument(id: id)) }
        let offline = try #require(URL(string: "https://u:p@127.0.0.1:1/db?uuid=node-b&fp=\(String(repeating: "A", count: 43))"))
        var config = ReplicatorConfiguration(collection: peer.collection, target: .url(offline))
        config.replicatorType = .push
        #expect(try await Replicator(config: config).pendingDocumentIDs() == ["a", "b"])
    }

    /// A peer with a small body limit answers 413 to a large push: the replicator sends it in
    /// halves until each part fits, and a document too large alone is refused while the others
    /// arrive.
    @Test func aPushTooLargeForThePeerGoesInHalves() async throws {
        let h = try await ListenerHarness(maxRequestBodySize: 64 << 10)
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let peer = try Peer()
            let text = String(repeating: "x", count: 20_000)
            for i in 0..<20 { try peer.collection.save(try MutableDocument(id: "d\(i)", data: ["text": text])) }
            try peer.collection.save(try MutableDocument(id: "huge", data: ["text": String(repeating: "y", count: 100_000)]))
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .push
            let replicator = Replicator(config: config)
            let documents = Collector<ReplicatedDocument>()
            let token = replicator.addDocumentReplicationListener { $0.documents.forEach(documents.append) }
            defer { token.remove() }
            #expect(try await replicator.runOnce().pushed == 20)
            #expect(try remote.count == 20)
            #expect(try remote.document(id: "huge") == nil)
            let refused = await documents.wait(count: 21).filter { $0.error != nil }
            #expect(refused.map(\.id) == ["huge"] && (refused.first?.error as? CouchError)?.status == 413)
        }
    }

    /// An attachment the peer cannot send (its content is gone there) refuses that document
    /// alone; the replication goes on with the others.
    @Test func anAttachmentThePeerLacksRefusesItsDocumentAlone() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            let doc = MutableDocument(id: "photo")
            doc.setBlob(Blob(contentType: "image/jpeg", data: Data("pixels".utf8)), forKey: "image")
            try remote.save(doc)
            try remote.save(try MutableDocument(id: "plain", data: ["n": 1]))
            let digest = try #require(try remote.document(id: "photo")?.blob(forKey: "image")?.digest)
            try FileManager.default.removeItem(at: try #require(remote.blobFile(digest: digest)))
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            let replicator = Replicator(config: config)
            let documents = Collector<ReplicatedDocument>()
            let token = replicator.addDocumentReplicationListener { $0.documents.forEach(documents.append) }
            defer { token.remove() }
            #expect(try await replicator.runOnce().pulled == 1)
            #expect(try peer.collection.document(id: "plain") != nil && peer.collection.document(id: "photo") == nil)
            let refused = await documents.wait(count: 2).filter { $0.error != nil }
            #expect(refused.map(\.id) == ["photo"] && (refused.first?.error as? CouchError)?.status == 412)
        }
    }

    @Test func requestsAreCutByBytes() throws {
        let docs = try [10, 10, 30, 5, 50, 1].enumerated().map { i, kb in
            try WireRevision(json: #"{"_id":"d\#(i)","_rev":"1-a","t":"\#(String(repeating: "x", count: kb * 1000))"}"#)
        }
        let parts = ReplicationRun.parts(of: docs, maxBytes: 40_000)
        #expect(parts.map { $0.map(\.id) } == [["d0", "d1"], ["d2", "d3"], ["d4"], ["d5"]])
        #expect(ReplicationRun.parts(of: docs, maxBytes: 1 << 20).count == 1)
        // Inline attachment data counts as well as the body.
        let data = Data(repeating: 1, count: 30_000).base64EncodedString()
        let attached = try WireRevision(json: #"{"_id":"a","_rev":"1-a","_attachments":{"x":{"content_type":"a/b","data":"\#(data)"}}}"#)
        #expect(ReplicationRun.parts(of: [attached, attached], maxBytes: 50_000).count == 2)
    }

    /// A one-shot run retries a peer it cannot reach yet up to `maxAttempts`, also when its
    /// certificate is pinned (the pin is checked in a handshake before any request).
    @Test func aOneShotRunRetriesAnUnreachablePinnedPeer() async throws {
        let peer = try Peer()
        let closed = try #require(URL(string: "https://u:p@127.0.0.1:1/db?fp=\(String(repeating: "A", count: 43))"))
        var config = ReplicatorConfiguration(collection: peer.collection, target: .url(closed))
        config.maxAttempts = 3
        config.maxAttemptWaitTime = .milliseconds(50)
        // Only the attempt count may end the run: a loaded machine must not hit the time budget first.
        config.maxRetryDuration = .seconds(3600)
        let offline = Collector<ReplicatorActivity>()
        let replicator = Replicator(config: config)
        let token = replicator.addChangeListener { if $0.status.activity == .offline { offline.append(.offline) } }
        defer { token.remove() }
        await #expect(throws: (any Error).self) { try await replicator.runOnce() }
        #expect(await offline.wait(count: 2).count == 2, "3 attempts: offline twice between them")
        #expect(replicator.status.activity == .stopped)
    }

    @Test func trustOnFirstUsePinsTheSelfSignedCertificateItSaw() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "x"))
            let peer = try Peer()
            // No fp in the URL: the system trust store refuses a self-signed certificate...
            let plain = try #require(URL(string: "https://\(ListenerHarness.user):s3cret%3Apa$$@127.0.0.1:\(h.listener.port ?? 0)/db"))
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(plain))
            let before = h.listener.status
            await #expect(throws: SyncError.self) { try await Replicator(config: config).runOnce() }
            let after = h.listener.status
            #expect(after.totalConnections == before.totalConnections + 1, "a certificate failure is not retried")
            #expect(after.totalRequests == before.totalRequests)
            // ...unless told to trust it on first use; then it is pinned.
            config.acceptOnlySelfSignedServerCertificate = true
            let replicator = Replicator(config: config)
            #expect(try await replicator.runOnce().pulled == 1)
            #expect(replicator.serverCertificateFingerprint == h.listener.tlsIdentity?.fingerprint)
        }
    }
}

extension MutableDocument {
    /// Edits in place and returns self, for one-line saves in tests.
    func then(_ edit: (MutableDocument) throws -> Void) rethrows -> MutableDocument {
        try edit(self)
        return self
    }
}
