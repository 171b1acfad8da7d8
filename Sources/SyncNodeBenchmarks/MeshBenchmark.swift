import Foundation
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

/// `SyncNodeBenchmarks mesh [N]`: the bytes on the wire for N changes made on node A to reach
/// node B, two mesh nodes paired both ways over loopback HTTPS: each side only pulling (the
/// default) against each side pushing and pulling (then ``MeshFanOutBenchmark``, ten nodes).
/// Bytes are request and response bodies, as both listeners count them (all traffic between
/// the two goes through one of them).
enum MeshBenchmark {
    static func run(count: Int) async throws {
        print("mesh benchmark: \(count) changes on node A reaching node B, two mesh nodes paired both ways, loopback HTTPS")
        let both = try await measure(.pushAndPull, count: count)
        let pull = try await measure(.pull, count: count)
        for (name, m) in [("push+pull both sides", both), ("pull only (default)", pull)] {
            print(String(format: "  %-22@ %9d bytes  %5d requests  %.2f s to converge", name as NSString, m.bytes, m.requests, m.seconds))
        }
        print(String(format: "  pull only / push+pull: %.2f of the bytes, %.2f of the requests",
                     Double(pull.bytes) / Double(max(both.bytes, 1)), Double(pull.requests) / Double(max(both.requests, 1))))
        try await MeshFanOutBenchmark.run(nodes: 10, documents: count >= 1000 ? 11 : 3, size: 64 << 10)
    }

    private static func measure(_ mode: MeshConfiguration.PeerSync, count: Int) async throws -> (bytes: Int, requests: Int, seconds: Double) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-mesh-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var nodes: [(directory: NodeDirectory, mesh: MeshNode)] = []
        defer { for node in nodes { node.directory.closeAll() } }
        for name in ["a", "b"] {
            nodes.append(try await startNode(in: root, name: name) { $0.peerSync = mode })
        }
        let (a, b) = (nodes[0], nodes[1])
        guard let urlA = a.mesh.pairingURL, let urlB = b.mesh.pairingURL else { throw SyncError.listenerFailed("no pairing URL") }
        try await b.mesh.pair(with: urlA)
        try await a.mesh.pair(with: urlB)
        try await settle(nodes.map(\.mesh))
        func traffic() -> (Int, Int) {
            nodes.reduce((0, 0)) { total, node in
                let s = node.mesh.listener.status
                return (total.0 + s.bytesSent + s.bytesReceived, total.1 + s.totalRequests)
            }
        }
        let before = traffic()
        let start = DispatchTime.now().uptimeNanoseconds
        guard let source = try a.directory.database("default")?.defaultCollection(),
              let target = try b.directory.database("default")?.defaultCollection() else { throw SyncError.listenerFailed("no collection") }
        try StoreBenchmark.insertAll(DocumentGenerator.documents(count: count), into: source, batchSize: 1000)
        while try target.count < count { try await Task.sleep(for: .milliseconds(10)) }
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        try await settle(nodes.map(\.mesh))
        let after = traffic()
        for node in nodes { await node.mesh.stop() }
        return (after.0 - before.0, after.1 - before.1, seconds)
    }

    /// A mesh node on loopback in `root/name`, found by no DNS-SD, configured by `configure`.
    static func startNode(
        in root: URL, name: String, configure: (inout MeshConfiguration) -> Void
    ) async throws -> (directory: NodeDirectory, mesh: MeshNode) {
        let directory = try NodeDirectory(url: root.appendingPathComponent(name))
        _ = try directory.database("default", create: true)
        var config = try MeshConfiguration(directory: directory)
        config.name = name
        config.listener.host = "127.0.0.1"
        config.advertise = false
        config.browse = false
        // No keyspace polling in the counts: the nodes share only `default` here.
        config.keyspaceRefreshInterval = .seconds(3600)
        configure(&config)
        let mesh = MeshNode(configuration: config)
        try await mesh.start()
        return (directory, mesh)
    }

    /// Returns once every replication of every node has been idle for a second.
    static func settle(_ meshes: [MeshNode]) async throws {
        var quiet = 0
        for _ in 0..<600 {
            let idle = meshes.allSatisfy { mesh in
                !mesh.peers.isEmpty && mesh.peers.allSatisfy { peer in
                    !peer.collections.isEmpty && peer.collections.values.allSatisfy { $0.activity == .idle }
                }
            }
            quiet = idle ? quiet + 1 : 0
            if quiet >= 10 { return }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw SyncError.listenerFailed("the mesh did not settle within 60 s")
    }
}
