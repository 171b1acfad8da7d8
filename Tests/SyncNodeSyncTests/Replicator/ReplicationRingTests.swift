import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Three nodes in a ring (A -> B -> C -> A), each keeping a continuous
/// push/pull replication with the next one's listener, converge after random
/// writes on all three, conflicting edits of shared documents included.
@Suite struct ReplicationRingTests {
    @Test func aRingOfThreeConverges() async throws {
        let nodes = [try await ListenerHarness(), try await ListenerHarness(), try await ListenerHarness()]
        try await withCleanup({ for node in nodes { await node.shutdown() } }) {
            let collections = try nodes.map { try #require(try $0.node.database("db", create: true)?.defaultCollection()) }
            var replicators: [Replicator] = []
            for (i, collection) in collections.enumerated() {
                var config = ReplicatorConfiguration(collection: collection, target: .url(try ReplicatorTests.pairingURL(nodes[(i + 1) % 3])))
                config.continuous = true
                replicators.append(Replicator(config: config))
            }
            replicators.forEach { $0.start() }
            defer { replicators.forEach { $0.stop() } }

            var random = SeededRandom(seed: 42)
            for round in 0..<4 {
                for (n, collection) in collections.enumerated() {
                    for _ in 0..<10 {
                        let id = Bool.random(using: &random) ? "shared-\(Int.random(in: 0..<5, using: &random))" : "n\(n)-\(Int.random(in: 0..<20, using: &random))"
                        if Int.random(in: 0..<10, using: &random) == 0 {
                            if try collection.document(id: id) != nil { try collection.delete(id: id) }
                            continue
                        }
                        let doc = try collection.document(id: id)?.toMutable() ?? MutableDocument(id: id)
                        doc.setInt(Int.random(in: 0..<1000, using: &random), forKey: "value")
                        doc.setString("node \(n) round \(round)", forKey: "by")
                        try collection.save(doc)
                    }
                }
                try await Task.sleep(for: .milliseconds(100))
            }

            func snapshot(_ c: DocumentCollection) throws -> [String: String] {
                var out: [String: String] = [:]
                for change in try c.changes(since: 0, allLeaves: true) {
                    let winner = try c.document(id: change.id)
                    out[change.id] = change.leafRevs.sorted().joined(separator: ",") + "|" + (winner?.toJSON() ?? "deleted")
                }
                return out
            }
            let converged = try await ContinuousReplicationTests.eventually {
                let states = try collections.map(snapshot)
                return states[0] == states[1] && states[1] == states[2]
            }
            #expect(converged, "the three nodes differ after 15 s")
            for collection in collections {
                for change in try collection.changes(since: 0) {
                    #expect(try collection.conflictingRevisions(id: change.id).isEmpty, "\(change.id) still has conflicts")
                }
            }
            #expect(try collections[0].count > 10)
        }
    }
}
