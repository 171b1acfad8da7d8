#if canImport(SyncNodeMesh)
#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import Testing
import SyncNodeCombine
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

@Suite struct MeshPublisherTests {
    /// A mesh node's presence as a publisher: the current peers first, then each change.
    @Test func peersPublisherFollowsPairing() async throws {
        var nodes: [(NodeDirectory, MeshNode)] = []
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-combine-mesh-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        for name in ["a", "b"] {
            let directory = try NodeDirectory(url: root.appendingPathComponent(name))
            _ = try directory.database("default", create: true)
            var config = try MeshConfiguration(directory: directory)
            config.listener.host = "127.0.0.1"
            config.advertise = false
            config.browse = false
            let node = MeshNode(configuration: config)
            try await node.start()
            nodes.append((directory, node))
        }
        let received = ReplicatorPublisherTests.Received<[String]>()
        let subscription = nodes[1].1.peersPublisher(on: DispatchQueue(label: "test.mesh")).sink { peers in
            received.append(peers.map(\.uuid))
        }
        try await nodes[1].1.pair(with: try #require(nodes[0].1.pairingURL))
        let deadline = ContinuousClock.now + .seconds(20)
        while ContinuousClock.now < deadline, !received.values.contains([nodes[0].0.uuid]) {
            try await Task.sleep(for: .milliseconds(20))
        }
        #expect(received.values.first == [], "the current (empty) presence comes first")
        #expect(received.values.contains([nodes[0].0.uuid]))
        subscription.cancel()
        for (directory, node) in nodes {
            await node.stop()
            directory.closeAll()
        }
    }
}
#endif
