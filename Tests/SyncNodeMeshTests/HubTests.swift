import Foundation
import Testing
@testable import SyncNodeMesh
import SyncNodeStore
@testable import SyncNodeSync
import SyncNodeTestSupport

/// `MeshConfiguration.hubs` against a real 3-member Apache CouchDB cluster: both ways through a
/// member, and on to another member when the one in use is killed, resuming from the checkpoint
/// the members share.
@Suite(.serialized, .enabled(if: CouchCluster.configured != nil,
                             "SYNCNODE_COUCHDB_CLUSTER is not set: the hub is not tested against a CouchDB cluster (.ci/run starts one beside the reference peers)"))
struct HubTests {
    typealias Node = MeshNodeTests.Node

    /// curl against a cluster member (`path` after its URL), off the cooperative threads.
    static func couch(_ member: URL, _ path: String, _ extra: [String] = []) async throws -> DocumentValue {
        let text = try await ChildProcess.runDetached(URL(fileURLWithPath: "/usr/bin/curl"), ["-s", "-m", "10"] + extra + [member.absoluteString + path]).stdout
        return (try? DocumentValue(json: text)) ?? .null
    }

    static func ids(in member: URL, _ db: String) async throws -> Set<String> {
        guard case .array(let rows)? = try await couch(member, "/\(db)/_all_docs")["rows"] else { return [] }
        return Set(rows.compactMap { $0["id"]?.stringValue })
    }

    @Test func aNodeSyncsThroughTheClusterAndMovesToAnotherMemberWhenItsOwnDies() async throws {
        let cluster = try #require(CouchCluster.configured)
        let db = "hubtest-\(UUID().uuidString.prefix(8).lowercased())"
        let node = try Node(name: "hubbed", shared: [db]) {
            $0.hubs = cluster.members
            $0.hubFailover = .seconds(2)
            $0.syncCheckInterval = .milliseconds(200)
        }
        try await node.mesh.start()
        let killed = cluster.members[0]
        func cleanUp() async {
            await node.mesh.stop()
            // Through Python, which closes every other descriptor in its child: a member started
            // by the script would otherwise keep the one Foundation watches for the child's exit.
            _ = try? await ChildProcess.runDetached(URL(fileURLWithPath: "/usr/bin/python3"), [
                "-c", "import subprocess, sys; subprocess.run(sys.argv[1], shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)",
                cluster.restart,
            ])
            _ = try? await Self.couch(cluster.members[1], "/\(db)", ["-X", "DELETE"])
        }
        do {
            let local = try #require(try node.directory.database(db)).defaultCollection()
            for i in 0..<30 { try local.save(try MutableDocument(id: "n\(i)", data: ["i": i])) }
            // Through the first member, read back through another.
            var arrived = false
            for _ in 0..<300 where !arrived {
                arrived = try await Self.ids(in: cluster.members[1], db).count == 30
                if !arrived { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(arrived, "the node's writes did not reach the cluster")

            // A write in the cluster comes back.
            _ = try await Self.couch(cluster.members[2], "/\(db)/from-cluster", ["-X", "PUT", "-d", #"{"v":1}"#])
            #expect(try await MeshNodeTests().eventually { try local.document(id: "from-cluster") != nil })

            // The hub is on the status pages as a peer, measured in sync.
            func hubRow() async throws -> DocumentValue? {
                guard case .array(let rows)? = try DocumentValue(json: try await node.curl("/_node/sync-status"))["peers"] else { return nil }
                return rows.first { $0["peer"] == "hub" && $0["keyspace"] == .string(db) }
            }
            var inSync = false
            for _ in 0..<150 where !inSync {
                inSync = try await hubRow()?["state"] == "in_sync"
                if !inSync { try await Task.sleep(for: .milliseconds(200)) }
            }
            let row = try await hubRow()
            #expect(inSync, "sync-status: \(String(describing: row))")

            // The member in use is killed; the next takes over, and the writes made meanwhile arrive.
            let hub = try #require(await node.mesh.replications.hubs[.database(db)])
            #expect(hub.member == "\(killed.host ?? ""):\(killed.port ?? 0)")
            let pid = try String(contentsOfFile: "\(cluster.directory)/member-1/couchdb.pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try await ChildProcess.runDetached(URL(fileURLWithPath: "/bin/kill"), ["-9", pid])
            let start = ContinuousClock.now
            for i in 30..<40 { try local.save(try MutableDocument(id: "n\(i)", data: ["i": i])) }
            var moved = false
            for _ in 0..<600 where !moved {
                let count = try await Self.ids(in: cluster.members[1], db).count
                moved = hub.failovers >= 1 && count == 41
                if !moved { try await Task.sleep(for: .milliseconds(100)) }
            }
            let failover = ContinuousClock.now - start
            #expect(moved, "after killing \(killed.port ?? 0): failovers \(hub.failovers), member \(hub.member)")
            #expect(hub.member != "\(killed.host ?? ""):\(killed.port ?? 0)")
            print("hub failover: writes made after the kill were in the cluster \(failover) later")

            // The members share the cluster's UUID, so both used one checkpoint per direction:
            // the second resumed from it rather than starting again.
            let checkpoints = try local.localDocuments().compactMap { doc -> ReplicationCheckpoint.Origin? in
                guard case .dictionary(let json) = try DocumentValue(json: doc.body) else { return nil }
                return ReplicationCheckpoint(json: json).origin
            }
            #expect(checkpoints.filter { $0.direction == .push }.count == 1, "\(checkpoints)")
            #expect(checkpoints.filter { $0.direction == .pull }.count == 1, "\(checkpoints)")
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }

    /// Two nodes that cannot see each other (two LANs) meet through the hub: each one's writes
    /// reach the other, nothing comes back to its writer, and a conflict made on both sides ends
    /// with one winner everywhere, in the cluster too.
    @Test func twoLANsMeetThroughTheHubAndAgreeOnConflicts() async throws {
        let cluster = try #require(CouchCluster.configured)
        let db = "hubtest-\(UUID().uuidString.prefix(8).lowercased())"
        // Each uses another member, as two sites near different members would.
        let a = try Node(name: "lan1", shared: [db]) { $0.hubs = cluster.members }
        let b = try Node(name: "lan2", shared: [db]) { $0.hubs = Array(cluster.members.reversed()) }
        try await a.mesh.start()
        try await b.mesh.start()
        func cleanUp() async {
            await a.mesh.stop()
            await b.mesh.stop()
            _ = try? await Self.couch(cluster.members[1], "/\(db)", ["-X", "DELETE"])
        }
        do {
            let left = try #require(try a.directory.database(db)).defaultCollection()
            let right = try #require(try b.directory.database(db)).defaultCollection()
            var latencies: [Double] = []
            for i in 0..<10 {
                let (writer, reader) = i % 2 == 0 ? (left, right) : (right, left)
                let start = ContinuousClock.now
                try writer.save(try MutableDocument(id: "w\(i)", data: ["i": i]))
                var seen = false
                for _ in 0..<3000 where !seen {
                    seen = try reader.document(id: "w\(i)") != nil
                    if !seen { try await Task.sleep(for: .milliseconds(10)) }
                }
                #expect(seen, "w\(i) did not cross")
                let elapsed = ContinuousClock.now - start
                latencies.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }
            let sorted = latencies.sorted()
            print("hub: write to the other LAN p50 \(sorted[sorted.count / 2]) s, p95 \(sorted[sorted.count * 95 / 100]) s over \(sorted.count) writes")

            // The same document made on both sides before either hears of the other's: a conflict.
            try left.save(try MutableDocument(id: "both", data: ["side": "lan1"]))
            try right.save(try MutableDocument(id: "both", data: ["side": "lan2"]))
            func winner(_ c: DocumentCollection) throws -> String? { try c.document(id: "both")?.revisionID }
            func clusterWinner() async throws -> String? { try await Self.couch(cluster.members[0], "/\(db)/both")["_rev"]?.stringValue }
            var agreed = false
            for _ in 0..<300 where !agreed {
                let there = try await clusterWinner()
                let conflicts = try await Self.couch(cluster.members[0], "/\(db)/both?conflicts=true")["_conflicts"]
                agreed = try there != nil && winner(left) == there && winner(right) == there && conflicts == nil
                    && !left.conflictedDocumentIDs().contains("both") && !right.conflictedDocumentIDs().contains("both")
                if !agreed { try await Task.sleep(for: .milliseconds(100)) }
            }
            let there = try await clusterWinner(), here = try (winner(left), winner(right))
            #expect(agreed, "lan1 \(String(describing: here.0)), lan2 \(String(describing: here.1)), cluster \(String(describing: there))")

            // Nothing came back to its writer: each pulled the other's 5 writes and the conflict's
            // revisions (the other side's, and the tombstone one resolver wrote), never its own.
            let pulledByA = a.mesh.peers.first { $0.uuid == "hub" }?.collections[.database(db)]?.pulled ?? -1
            let pulledByB = b.mesh.peers.first { $0.uuid == "hub" }?.collections[.database(db)]?.pulled ?? -1
            #expect((5...7).contains(pulledByA) && (5...7).contains(pulledByB), "lan1 pulled \(pulledByA), lan2 \(pulledByB)")
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }
}
