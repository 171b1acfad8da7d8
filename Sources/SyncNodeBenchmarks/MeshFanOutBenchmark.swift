import Foundation
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

/// `SyncNodeBenchmarks mesh`, second part: the body bytes one new document puts on the wire
/// across a full mesh of ten nodes (every node pulling from every other, over loopback HTTPS,
/// compression off so the bytes are the document's own), against the least possible: its
/// JSON crossing once to each of the nine other nodes. Measured with the nodes' replications
/// sharing their fetches (as they do) and not sharing them (as before), documents written one
/// at a time on the first node, each counted until every node has it and the mesh is idle.
enum MeshFanOutBenchmark {
    static let target = 1.1

    static func run(nodes: Int, documents: Int, size: Int) async throws {
        print("mesh fan-out: \(documents) documents of \(size / 1024) KB written one at a time on node 1 of a \(nodes)-node full mesh, loopback HTTPS, no compression")
        var figures: [(String, [Double], [Double])] = []
        for sharing in [false, true] {
            InFlightRevisions.shared.isEnabled = sharing
            let (ratios, seconds) = try await measure(nodes: nodes, documents: documents, size: size)
            figures.append((sharing ? "fetches shared" : "fetches not shared", ratios, seconds))
        }
        InFlightRevisions.shared.isEnabled = true
        for (name, ratios, seconds) in figures {
            let ratio = Report.median(ratios)
            print(String(format: "  %-20@ bytes / (%d × document): median %.2f, worst %.2f   on all nodes after: median %.3f s",
                         name as NSString, nodes - 1, ratio, ratios.max() ?? 0, Report.median(seconds)))
        }
        let shared = Report.median(figures[1].1)
        print(String(format: "  each revision crosses to each node once: %.2f ≤ %.1f %@", shared, target, shared <= target ? "met" : "MISSED"))
    }

    private static func measure(nodes count: Int, documents: Int, size: Int) async throws -> (ratios: [Double], seconds: [Double]) {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-fanout-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        var nodes: [(directory: NodeDirectory, mesh: MeshNode)] = []
        defer { for node in nodes { node.directory.closeAll() } }
        for index in 0..<count {
            nodes.append(try await MeshBenchmark.startNode(in: root, name: "n\(index)") { $0.compression = false })
        }
        for (i, node) in nodes.enumerated() {
            for (j, other) in nodes.enumerated() where i != j {
                guard let url = other.mesh.pairingURL else { throw SyncError.listenerFailed("no pairing URL") }
                try await node.mesh.pair(with: url)
            }
        }
        let meshes = nodes.map(\.mesh)
        try await MeshBenchmark.settle(meshes)
        let collections = try nodes.map { node in
            guard let collection = try node.directory.database("default")?.defaultCollection() else { throw SyncError.listenerFailed("no collection") }
            return collection
        }
        func bytes() -> Int { meshes.reduce(0) { $0 + $1.listener.status.bytesSent + $1.listener.status.bytesReceived } }
        var ratios: [Double] = []
        var seconds: [Double] = []
        for number in 0..<documents {
            let id = "fan-\(number)"
            // Random hex: JSON that no encoding would shorten much.
            let text = (0..<size / 16).map { _ in String(format: "%016llx", UInt64.random(in: .min ... .max)) }.joined()
            let document = try MutableDocument(id: id, data: ["text": text, "n": number])
            let before = bytes()
            let start = DispatchTime.now().uptimeNanoseconds
            try collections[0].save(document)
            let json = try collections[0].document(id: id)?.toJSON().utf8.count ?? size
            while try collections.contains(where: { try $0.document(id: id) == nil }) { try await Task.sleep(for: .milliseconds(2)) }
            seconds.append(Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9)
            try await MeshBenchmark.settle(meshes)
            ratios.append(Double(bytes() - before) / Double((count - 1) * json))
        }
        for mesh in meshes { await mesh.stop() }
        return (ratios, seconds)
    }
}
