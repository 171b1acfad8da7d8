import Foundation
import Synchronization
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// What a continuous pull asks its peer for each change once it is caught up: the long poll
/// that wakes it brings the change, and the pass goes on from the last pass's checkpoints.
@Suite struct ContinuousPassTests {
    typealias Peer = ReplicatorTests.Peer

    @Test func aWokenPassAsksNeitherForTheChangesAgainNorForCheckpoints() async throws {
        let asked = Mutex<[String]>([])
        let h = try await ListenerHarness(faultInjector: FaultInjector { method, path in
            if path.hasSuffix("/_changes") || path.contains("/_local/") { asked.withLock { $0.append("\(method) \(path.split(separator: "/").last ?? "")") } }
            return nil
        })
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "first"))
            let peer = try Peer()
            var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
            config.replicatorType = .pull
            config.continuous = true
            config.heartbeat = .seconds(60)
            config.readTimeout = .seconds(90)
            let replicator = Replicator(config: config)
            replicator.start()
            defer { replicator.stop() }
            // Caught up: the first pass has saved its checkpoint and gone idle.
            #expect(try await SharedFetchTests.eventually { try peer.collection.document(id: "first") != nil && replicator.status.activity == .idle })
            asked.withLock { $0 = [] }

            for i in 0..<5 {
                try remote.save(MutableDocument(id: "d\(i)", data: ["i": i]))
                #expect(try await SharedFetchTests.eventually { try peer.collection.document(id: "d\(i)") != nil })
            }
            try await Task.sleep(for: .milliseconds(200))
            let requests = asked.withLock { $0 }
            // Per change: one long poll (the one that brought the first may have been asked for
            // before the count began; the last one waits now) and one checkpoint saved on the
            // source; no checkpoint read, no second read of the feed (before: ten or eleven feed
            // reads and five checkpoint reads).
            #expect((5...6).contains(requests.filter { $0.hasSuffix("_changes") }.count), "\(requests)")
            #expect(requests.filter { $0.hasPrefix("GET") && !$0.hasSuffix("_changes") }.isEmpty, "\(requests)")
            #expect(requests.filter { $0.hasPrefix("PUT") }.count == 5, "\(requests)")
            #expect(try ReplicatorTests.state(peer.collection) == ReplicatorTests.state(remote))
        }
    }
}
