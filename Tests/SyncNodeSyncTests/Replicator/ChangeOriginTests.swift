import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Change events name who made a change: a REST client of the listener, or the replicator
/// pulling from a peer. Wire formats are unchanged.
@Suite struct ChangeOriginTests {
    @Test func restWritesAndPullsSayWhereTheyCameFrom() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let served = try #require(try h.node.database("db")).defaultCollection()
            let heard = Collector<ChangedDocument>()
            let token = served.addChangeListener { $0.documents.forEach(heard.append) }
            defer { token.remove() }
            let put = try await h.request(.PUT, "/db/a", body: #"{"v":1}"#)
            #expect(put.status == 201)
            let change = try #require(await heard.wait(count: 1).first)
            #expect(change.id == "a" && change.origin == .client && change.revisionID == put["rev"]?.stringValue)

            // The other way: a peer pulls it, and its listener hears the replicator.
            let peer = try ReplicatorTests.Peer()
            let pulled = Collector<ChangedDocument>()
            let peerToken = peer.collection.addChangeListener { $0.documents.forEach(pulled.append) }
            defer { peerToken.remove() }
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            #expect(try await Replicator(config: config).runOnce().pulled == 1)
            let arrived = try #require(await pulled.wait(count: 1).first)
            #expect(arrived.id == "a" && arrived.revisionID == change.revisionID)
            #expect(arrived.origin == .replication(peer: "\(h.node.uuid)/db"), "\(arrived.origin)")
        }
    }
}
