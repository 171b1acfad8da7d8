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

    /// A database name for one test: `prefix-` and 8 random characters.
    static func freshDatabase(_ prefix: String) -> String { "\(prefix)-\(UUID().uuidString.prefix(8).lowercased())" }

    /// Runs `body`, then `cleanUp`, also when `body` throws.
    static func cleaningUp(_ cleanUp: () async -> Void, _ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch {
            await cleanUp()
            throw error
        }
        await cleanUp()
    }

    static func ids(in member: URL, _ db: String) async throws -> Set<String> {
        guard case .array(let rows)? = try await couch(member, "/\(db)/_all_docs")["rows"] else { return [] }
        return Set(rows.compactMap { $0["id"]?.stringValue })
    }

    @Test func aNodeSyncsThroughTheClusterAndMovesToAnotherMemberWhenItsOwnDies() async throws {
        let cluster = try #require(CouchCluster.configured)
        let db = Self.freshDatabase("hubtest")
        let node = try Node(name: "hubbed", shared: [db]) {
            $0.hubs = cluster.members
            $0.hubFailover = .seconds(2)
            $0.syncCheckInterval = .milliseconds(200)
        }
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
        try await Self.cleaningUp(cleanUp) {
            // More than a batch (2000), so the member dies mid-replication.
            let local = try #require(try node.directory.database(db, create: true)).defaultCollection()
            let count = 3000
            try local.database.inBatch {
                for i in 0..<count { try local.save(try MutableDocument(id: "n\(i)", data: ["i": i])) }
            }
            try await node.mesh.start()
            var started: HubReplication?
            for _ in 0..<200 where started == nil {
                started = node.mesh.replications.hubs.withLock { $0[.database(db)] }
                if started == nil { try await Task.sleep(for: .milliseconds(50)) }
            }
            let hub = try #require(started, "the hub replication did not start")
            #expect(hub.member == "\(killed.host ?? ""):\(killed.port ?? 0)")

            // The member in use is killed once the first batch is in; the next takes over.
            var pushedAtKill = 0
            for _ in 0..<3000 where pushedAtKill == 0 {
                pushedAtKill = hub.moved.pushed
                if pushedAtKill == 0 { try await Task.sleep(for: .milliseconds(20)) }
            }
            let pid = try String(contentsOfFile: "\(cluster.directory)/member-1/couchdb.pid", encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            _ = try await ChildProcess.runDetached(URL(fileURLWithPath: "/bin/kill"), ["-9", pid])
            #expect(pushedAtKill > 0 && pushedAtKill < count, "not mid-replication: \(pushedAtKill) of \(count) pushed at the kill")
            let start = ContinuousClock.now
            for i in count..<(count + 10) { try local.save(try MutableDocument(id: "n\(i)", data: ["i": i])) }
            var moved = false
            for _ in 0..<600 where !moved {
                let arrived = (try? await Self.ids(in: cluster.members[1], db).count) == count + 10
                moved = hub.failovers >= 1 && arrived
                if !moved { try await Task.sleep(for: .milliseconds(100)) }
            }
            let failover = ContinuousClock.now - start
            #expect(moved, "after killing \(killed.port ?? 0): failovers \(hub.failovers), member \(hub.member)")
            #expect(hub.member != "\(killed.host ?? ""):\(killed.port ?? 0)")
            print("hub failover: kill -9 with \(pushedAtKill) of \(count) pushed; writes made after it were in the cluster \(failover) later")

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

            // What crossed twice: revisions pushed beyond those the cluster needed. The next
            // member resumes from the checkpoint and asks the cluster what it lacks, so at most
            // the batch in flight at the kill goes again; nothing the node wrote comes back. (Counted
            // once in sync: the cluster shows a batch before the replicator has counted it.) Fewer
            // than were written is no loss: the kill can cut off the answer to a batch the dying
            // member had already handed on, which the next one then does not ask for.
            let resent = hub.moved.pushed - (count + 10)
            #expect(resent <= 2000, "pushed \(hub.moved.pushed) for \(count + 10) documents")
            #expect(hub.moved.pulled == 1, "pulled \(hub.moved.pulled): only from-cluster was to come")
            if resent >= 0 {
                print("hub failover: \(resent) revisions re-sent")
            } else {
                print("hub failover: 0 revisions re-sent; \(-resent) reached the cluster in the batch whose answer the kill cut off")
            }

            // The members share the cluster's UUID, so both used one checkpoint per direction:
            // the second resumed from it rather than starting again.
            let checkpoints = try local.localDocuments().compactMap { doc -> ReplicationCheckpoint.Origin? in
                guard case .dictionary(let json) = try DocumentValue(json: doc.body) else { return nil }
                return ReplicationCheckpoint(json: json).origin
            }
            #expect(checkpoints.filter { $0.direction == .push }.count == 1, "\(checkpoints)")
            #expect(checkpoints.filter { $0.direction == .pull }.count == 1, "\(checkpoints)")
        }
    }

    /// Two nodes that cannot see each other (two LANs) meet through the hub: each one's writes
    /// reach the other, nothing comes back to its writer, and a conflict made on both sides ends
    /// with one winner everywhere, in the cluster too.
    @Test func twoLANsMeetThroughTheHubAndAgreeOnConflicts() async throws {
        let cluster = try #require(CouchCluster.configured)
        let db = Self.freshDatabase("hubtest")
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
        try await Self.cleaningUp(cleanUp) {
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
            // Asked of each member in turn: the one the failover test killed and restarted may
            // not answer yet (the suite once saw no winner there while the others had it).
            func clusterDocument(_ query: String) async throws -> DocumentValue {
                for member in cluster.members {
                    let answer = try await Self.couch(member, "/\(db)/both" + query)
                    if answer["_rev"] != nil { return answer }
                }
                return .null
            }
            func clusterWinner() async throws -> String? { try await clusterDocument("")["_rev"]?.stringValue }
            var agreed = false
            for _ in 0..<300 where !agreed {
                let there = try await clusterWinner()
                let conflicts = try await clusterDocument("?conflicts=true")["_conflicts"]
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
        }
    }

    /// With a tombstone policy on `MeshNode.tombstoneHorizon`, a tombstone waits for the hub:
    /// held while no member has been reached, reaped once this node's push checkpoint in the
    /// cluster is past it, and the cluster keeps the deletion.
    @Test func aTombstoneWaitsUntilTheHubHasIt() async throws {
        let cluster = try #require(CouchCluster.configured)
        let db = Self.freshDatabase("hubreap")
        let node = try Node(name: "reaper", shared: [db]) { $0.hubs = Array(cluster.members.dropFirst()) }
        func cleanUp() async {
            await node.mesh.stop()
            _ = try? await Self.couch(cluster.members[1], "/\(db)", ["-X", "DELETE"])
        }
        try await Self.cleaningUp(cleanUp) {
            let database = try #require(try node.directory.database(db, create: true))
            let local = try database.defaultCollection()
            for id in ["gone", "kept"] { try local.save(try MutableDocument(id: id, data: ["v": 1])) }
            try local.delete(id: "gone")
            database.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(3600), horizon: node.mesh.tombstoneHorizon)
            let start = Date()
            _ = try database.reapTombstones(now: start)

            // Old enough, but no member has been reached: held by the hub.
            let held = try #require(try database.reapTombstones(now: start.addingTimeInterval(3601)).first)
            #expect(held.reaped == 0 && held.waiting == 1, "\(held)")
            #expect(held.holders == ["hub has not been reached yet"], "\(held)")

            // Once pushed, it goes; the cluster has the deletion.
            try await node.mesh.start()
            var reaped = 0
            for k in 0..<300 where reaped == 0 {
                reaped = try database.reapTombstones(now: start.addingTimeInterval(3602 + Double(k))).first?.reaped ?? 0
                if reaped == 0 { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(reaped == 1)
            #expect(try await Self.couch(cluster.members[1], "/\(db)/gone")["reason"] == "deleted")
            #expect(try await Self.ids(in: cluster.members[1], db) == ["kept"])
        }
    }

    /// A subscription chooses what comes from the hub, not what goes to it: a site pulls its own
    /// part of the cluster and still gives the cluster everything it writes.
    @Test func aSubscribedNodePullsItsPartOfTheHubAndPushesAll() async throws {
        let cluster = try #require(CouchCluster.configured)
        let db = Self.freshDatabase("hubsub")
        let member = cluster.members[1]
        _ = try await Self.couch(member, "/\(db)", ["-X", "PUT"])
        for (id, site) in [("a1", "a"), ("b1", "b")] {
            _ = try await Self.couch(member, "/\(db)/\(id)", ["-X", "PUT", "-d", #"{"site":"\#(site)"}"#])
        }
        let node = try Node(name: "site-a", shared: [db]) {
            $0.hubs = [member]
            $0.subscriptions = [.database(db): ["site": "a"]]
        }
        func cleanUp() async {
            await node.mesh.stop()
            _ = try? await Self.couch(member, "/\(db)", ["-X", "DELETE"])
        }
        try await Self.cleaningUp(cleanUp) {
            let local = try #require(try node.directory.database(db, create: true)).defaultCollection()
            try local.save(try MutableDocument(id: "mine", data: ["site": "b"]))
            try await node.mesh.start()
            #expect(try await MeshNodeTests().eventually { try local.document(id: "a1") != nil })
            var pushed = false
            for _ in 0..<300 where !pushed {
                pushed = try await Self.ids(in: member, db).contains("mine")
                if !pushed { try await Task.sleep(for: .milliseconds(100)) }
            }
            #expect(pushed, "the node's own document, outside its subscription, did not reach the hub")

            // Later writes in the cluster: only the subscribed part arrives. "a2" is written last,
            // so once it is here the feed has passed "b2".
            for (id, site) in [("b2", "b"), ("a2", "a")] {
                _ = try await Self.couch(member, "/\(db)/\(id)", ["-X", "PUT", "-d", #"{"site":"\#(site)"}"#])
            }
            #expect(try await MeshNodeTests().eventually { try local.document(id: "a2") != nil })
            #expect(try local.document(id: "b1") == nil && local.document(id: "b2") == nil)
            #expect(try local.count == 3, "a1, a2 and mine")
        }
    }

    /// A database deleted and made again under a running node is replicated with the hub again:
    /// the replication of the old one stops, and one of the new one starts.
    @Test func aDatabaseMadeAgainIsSyncedWithTheHubAgain() async throws {
        let cluster = try #require(CouchCluster.configured)
        let db = Self.freshDatabase("hubagain")
        let member = cluster.members[1]
        let node = try Node(name: "again", shared: [db]) { $0.hubs = [member] }
        func cleanUp() async {
            await node.mesh.stop()
            _ = try? await Self.couch(member, "/\(db)", ["-X", "DELETE"])
        }
        func inCluster(_ id: String) async throws -> Bool {
            for _ in 0..<300 {
                if try await Self.ids(in: member, db).contains(id) { return true }
                try await Task.sleep(for: .milliseconds(100))
            }
            return false
        }
        try await Self.cleaningUp(cleanUp) {
            try #require(try node.directory.database(db, create: true)).defaultCollection().save(try MutableDocument(id: "before", data: [:]))
            try await node.mesh.start()
            #expect(try await inCluster("before"))
            try node.directory.deleteDatabase(db)
            try await Task.sleep(for: .milliseconds(500))
            try #require(try node.directory.database(db, create: true)).defaultCollection().save(try MutableDocument(id: "after", data: [:]))
            #expect(try await inCluster("after"), "the database made again was not synced with the hub")
        }
    }

    /// Members that refuse the node's credentials are not failed over from (the next would
    /// refuse too); the status says why it does not sync.
    @Test func refusedCredentialsAreReportedNotFailedOver() async throws {
        let cluster = try #require(CouchCluster.configured)
        let wrong = try cluster.members.dropFirst().map { member in
            var parts = try #require(URLComponents(url: member, resolvingAgainstBaseURL: false))
            // A user nobody has: CouchDB locks a name out after a few failures from one address,
            // and the other tests sign in as the admin from this one.
            parts.user = "nobody-\(UUID().uuidString.prefix(8).lowercased())"
            return try #require(parts.url)
        }
        let node = try Node(name: "refused", shared: ["default"]) {
            $0.hubs = wrong
            $0.hubFailover = .milliseconds(500)
        }
        try await node.mesh.start()
        var row: DocumentValue?
        for _ in 0..<100 where row?["last_error"]?.stringValue == nil {
            guard case .array(let rows)? = try DocumentValue(json: try await node.curl("/_node/sync-status"))["peers"] else { continue }
            row = rows.first { $0["peer"] == "hub" }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .seconds(2))
        let hub = try #require(node.mesh.replications.hubs.withLock { $0[.database("default")] })
        #expect(hub.failovers == 0)
        let error = row?["last_error"]?.stringValue ?? ""
        #expect(error.contains("401") || error.contains("403"), "\(String(describing: row))")
        await node.mesh.stop()
    }
}
