import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Checkpoints on an HTTP peer cost one request per batch: each save sends the `_rev` read at the
/// start of the run or returned by the save before, and only a conflict (someone else wrote the
/// checkpoint since) makes it read the document again.
@Suite struct CheckpointTests {
    typealias Peer = ReplicatorTests.Peer

    @Test func aSaveSendsTheRevisionItKnowsAndRereadsAfterAConflict() async throws {
        let requests = Shared<[String]>([])
        let conflicts = Shared(0)
        // Every request for a checkpoint document is noted; the next `conflicts` saves are refused with 409.
        let h = try await ListenerHarness(faultInjector: FaultInjector { method, path in
            guard path.contains("/_local/") else { return nil }
            requests.withLock { $0.append(method) }
            guard method == "PUT" else { return nil }
            return conflicts.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0 ? 409 : nil
            }
        })
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<10 { try remote.save(MutableDocument(id: "d\(i)")) }
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            config.batchSize = 4

            #expect(try await Replicator(config: config).runOnce().pulled == 10)
            // The source's checkpoint read once (there is none yet), then saved once for each of
            // the three batches.
            #expect(requests.withLock { $0 } == ["GET", "PUT", "PUT", "PUT"])

            requests.withLock { $0 = [] }
            conflicts.withLock { $0 = 1 }
            for i in 10..<13 { try remote.save(MutableDocument(id: "d\(i)")) }
            #expect(try await Replicator(config: config).runOnce().pulled == 3)
            // The save with the known revision conflicts: read again, and saved over what is there.
            #expect(requests.withLock { $0 } == ["GET", "PUT", "GET", "PUT"])

            // That save took: the next run starts where it ended, with nothing to save.
            requests.withLock { $0 = [] }
            #expect(try await Replicator(config: config).runOnce().pulled == 0)
            #expect(requests.withLock { $0 } == ["GET"])
            #expect(try peer.collection.count == 13)
        }
    }
}
