import Foundation
import Testing
@testable import SyncNodeMesh
import SyncNodeStore
@testable import SyncNodeSync

/// `MeshConfiguration.subscriptions`: a node pulls only what it subscribes to, says so in its
/// sync status, is measured in sync on what it subscribes to, and its own writes still reach
/// peers that pull everything.
@Suite(.serialized) struct SubscriptionTests {
    typealias Node = MeshNodeTests.Node

    func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        try await MeshNodeTests().eventually(condition)
    }

    static func ids(_ c: DocumentCollection) throws -> Set<String> {
        Set(try c.changes(since: 0).filter { !$0.deleted }.map(\.id))
    }

    @Test func aSubscriberPullsOnlyWhatItSubscribesTo() async throws {
        let selector: DocumentValue = ["type": "order", "store": "s1"]
        let a = try Node(name: "a")
        let b = try Node(name: "b") {
            $0.subscriptions = [.database("default"): selector]
            $0.syncCheckInterval = .milliseconds(200)
        }
        for i in 0..<30 {
            let data: [String: Any] = i % 3 == 0 ? ["type": "order", "store": i % 2 == 0 ? "s1" : "s2"] : ["type": "note"]
            try a.collection().save(try MutableDocument(id: "a\(i)", data: data))
        }
        let wanted: Set<String> = ["a0", "a6", "a12", "a18", "a24"]
        try await a.mesh.start()
        try await b.mesh.start()
        try await b.mesh.pair(with: try #require(a.mesh.pairingURL))
        func sync() -> MeshPeer.CollectionSync? { b.mesh.peers.first?.collections[.database("default")] }
        let arrived = try await eventually { try Self.ids(b.collection()) == wanted && sync()?.state == .inSync }
        let held = try Self.ids(b.collection()).sorted()
        #expect(arrived, "\(held) \(String(describing: sync()?.state)) \(String(describing: sync()?.reason))")
        #expect(sync()?.subscription == selector)

        // A new match arrives; a new non-match never does, and b is in sync all the same.
        try a.collection().save(try MutableDocument(id: "late-order", data: ["type": "order", "store": "s1"]))
        try a.collection().save(try MutableDocument(id: "late-note", data: ["type": "note"]))
        #expect(try await eventually { try Self.ids(b.collection()).contains("late-order") })
        #expect(try await eventually { sync()?.state == .inSync && sync()?.pending?.pull == 0 })
        #expect(try b.collection().document(id: "late-note") == nil)

        // b's own writes reach a, which subscribes to nothing, whatever they match.
        try b.collection().save(try MutableDocument(id: "from-b", data: ["type": "note"]))
        #expect(try await eventually { try a.collection().document(id: "from-b") != nil })

        // The sync status and the dashboard's data say what b pulls.
        let status = try DocumentValue(json: try await b.curl("/_node/sync-status"))
        guard case .array(let rows)? = status["peers"], let row = rows.first(where: { $0["keyspace"] == "default" }) else {
            Issue.record("sync-status answered \(status)")
            return
        }
        #expect(row["subscription"] == selector)
        await b.mesh.stop()
        await a.mesh.stop()
    }

    @Test func subscriptionsThatCannotBeKeptAreRefusedAtStart() async throws {
        let pushing = try Node(name: "p") {
            $0.subscriptions = [.database("default"): ["type": "order"]]
            $0.peerSync = .pushAndPull
        }
        await #expect(throws: SyncError.self) { try await pushing.mesh.start() }
        let unknown = try Node(name: "u") { $0.subscriptions = [.database("default"): ["n": ["$near": 1]]] }
        await #expect(throws: StoreError.self) { try await unknown.mesh.start() }
    }
}
