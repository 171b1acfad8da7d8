import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// `ReplicatorConfiguration.selector`: a pull asks the peer's feed for the matching documents, a
/// push reads them from the local store, and widening the selector brings only what is new.
@Suite struct SelectiveReplicationTests {
    @Test func aSelectorPullsOnlyMatchesAndWideningItSendsNothingTwice() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            try await SelectorFeedTests.fill(h)
            let peer = try ReplicatorTests.Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            config.batchSize = 5
            config.selector = ["type": "order", "store": "s1"]
            let narrow = SelectorFeedTests.orders.filter { (Int($0.dropFirst()) ?? 0) % 3 == 1 }
            #expect(try await Replicator(config: config).runOnce().pulled == narrow.count)
            #expect(try Self.ids(peer.collection) == narrow.sorted())

            // Widened: a new replication (new checkpoints), and _revs_diff keeps what is held from crossing.
            config.selector = ["type": "order"]
            let widened = Replicator(config: config)
            #expect(try await widened.runOnce().pulled == SelectorFeedTests.orders.count - narrow.count)
            #expect(try Self.ids(peer.collection) == SelectorFeedTests.orders.sorted())

            // Changes that match nothing move the checkpoint on, and count as nothing pending.
            let remote = try #require(try h.node.database("db")?.defaultCollection())
            for i in 0..<30 { try remote.save(try MutableDocument(id: "later\(i)", data: ["type": "note"])) }
            config.continuous = true
            let continuous = Replicator(config: config)
            let passes = Collector<Int>()
            let watch = continuous.addChangeListener { if $0.status.activity == .idle { passes.append(0) } }
            defer { watch.remove() }
            continuous.start()
            _ = await passes.wait(count: 1)
            #expect(continuous.status.result.pulled == 0)
            let checkpoint = try await LocalDatabase(collection: peer.collection).checkpoint(
                try continuous.replicationID(remoteID: HTTPRemote.identity(uuid: h.node.uuid, database: "db"), direction: .pull))
            #expect(checkpoint?.sourceLastSequence == String(try remote.lastSequence()))
            for i in 0..<30 { try remote.save(try MutableDocument(id: "after\(i)", data: ["type": "note"])) }
            #expect(try await continuous.pendingChanges().pull == 0, "changes the selector skips are not pending")
            continuous.stop()
            await continuous.waitUntilStopped()
        }
    }

    @Test func aSelectorPushesOnlyMatches() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            let peer = try ReplicatorTests.Peer()
            for i in 0..<40 { try peer.collection.save(try MutableDocument(id: "p\(i)", data: ["n": i, "even": i % 2 == 0])) }
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .push
            config.selector = ["even": true, "n": ["$lt": 20]]
            let replicator = Replicator(config: config)
            #expect(try await replicator.pendingDocumentIDs().count == 10)
            #expect(try await replicator.runOnce().pushed == 10)
            let remote = try #require(try h.node.database("db")?.defaultCollection())
            #expect(try Self.ids(remote) == (0..<10).map { "p\($0 * 2)" }.sorted())
            #expect(try await replicator.pendingDocumentIDs().isEmpty)
        }
    }

    @Test func badSelectorsFailBeforeAnyPeerIsAsked() async throws {
        let peer = try ReplicatorTests.Peer()
        let other = try ReplicatorTests.Peer()
        var config = ReplicatorConfiguration(collection: peer.collection, target: .collection(other.collection))
        config.selector = ["n": ["$near": 1]]
        await #expect(throws: StoreError.self) { try await Replicator(config: config).runOnce() }
        config.selector = ["n": 1]
        config.documentIDs = ["a"]
        await #expect(throws: SyncError.self) { try await Replicator(config: config).runOnce() }
    }

    static func ids(_ c: DocumentCollection) throws -> [String] {
        try c.changes(since: 0).filter { !$0.deleted }.map(\.id).sorted()
    }
}
