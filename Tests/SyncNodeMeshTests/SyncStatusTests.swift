import Foundation
import Synchronization
import Testing
@testable import SyncNodeMesh
import SyncNodeStore
@testable import SyncNodeSync

/// The sync status is measured, never assumed: a replication that is idle while its peer has
/// changes it did not announce is "catching up", with the exact count, until it has them.
@Suite(.serialized) struct SyncStatusTests {
    typealias Node = MeshNodeTests.Node

    final class Switch: Sendable {
        private let value = Mutex(false)
        var isOn: Bool { value.withLock { $0 } }
        func set(_ on: Bool) { value.withLock { $0 = on } }
    }

    final class Events: Sendable {
        private let told = Mutex<[String]>([])
        func add(_ event: MeshEvent) {
            guard case .syncState(_, let keyspace, let sync) = event, keyspace == .database("default") else { return }
            told.withLock { $0.append(sync.state.rawValue) }
        }
        var all: [String] { told.withLock { $0 } }
    }

    func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        try await MeshNodeTests().eventually(condition)
    }

    @Test func anIdleReplicationThatIsBehindSaysCatchingUpWithTheCount() async throws {
        let deaf = Switch(), events = Events()
        // A's long polls hold its changes back while `deaf` is on (fault injection): B's
        // replicator, waiting on one, stays idle though A has changes B lacks.
        let (a, b) = try await pairedInSync(faults: FaultInjector(deafFeeds: { deaf.isOn }), events: events)
        func sync() -> MeshPeer.CollectionSync? { Self.sync(b) }
        #expect(try b.collection().document(id: "first") != nil)
        #expect(sync()?.pending?.pull == 0 && sync()?.lastInSync != nil && sync()?.reason == nil)

        deaf.set(true)
        for n in 1...3 { try a.collection().save(try MutableDocument(id: "behind-\(n)", data: ["n": n])) }
        #expect(try await eventually { sync()?.state == .catchingUp && sync()?.pending?.pull == 3 })
        let behind = try #require(sync())
        #expect(behind.activity == .idle, "the replicator idles, waiting on the held-back feed")
        #expect(behind.reason == "3 to pull")
        #expect(try b.collection().document(id: "behind-1") == nil)

        // Over HTTP: GET /_node/sync-status and the Prometheus gauges say the same.
        let status = try await get(b, "/_node/sync-status")
        #expect(status["in_sync"] == .bool(false))
        guard case .array(let rows)? = status["peers"], let row = rows.first(where: { $0["keyspace"] == .string("default") }) else {
            Issue.record("sync-status answered \(status)")
            return
        }
        #expect(row["state"] == .string("catching_up") && row["pending"]?["pull"] == .int(3) && row["peer"] == .string(a.directory.uuid))
        #expect(row["last_in_sync"]?.stringValue != nil)
        let metrics = try await text(b, "/_node/_local/_prometheus")
        #expect(metrics.contains(#"syncnode_in_sync{peer="\#(a.directory.uuid)",keyspace="default"} 0"#), "\(metrics)")
        #expect(metrics.contains(#"syncnode_pending_changes{peer="\#(a.directory.uuid)",keyspace="default",direction="pull"} 3"#))

        deaf.set(false)
        #expect(try await eventually { sync()?.state == .inSync && sync()?.pending?.pull == 0 })
        #expect(try b.collection().document(id: "behind-3") != nil)
        #expect(try await get(b, "/_node/sync-status")["in_sync"] == .bool(true))
        // One line each way: in sync, no longer (catching up), in sync again.
        #expect(events.all == ["in_sync", "catching_up", "in_sync"])

        // Trust withdrawn: its replications stop, and no "in sync" is left behind for them.
        #expect(try TrustStore(directory: b.directory).remove(fingerprint: try #require(a.mesh.pairingURL?.fingerprint)))
        #expect(try await eventually { b.mesh.peers.first?.trusted == false && sync() == nil })
        let after = try await get(b, "/_node/sync-status")
        #expect(after["in_sync"] == .bool(false) && after["peers"] == .array([]), "\(after)")
        await b.mesh.stop()
        await a.mesh.stop()
    }

    /// A continuous replicator makes a pass each time its long poll ends empty (every heartbeat;
    /// here, with the peer cutting long polls short, two a second). Such passes find nothing:
    /// the node stays in sync and says nothing, where it once said "no longer in sync" and "in
    /// sync" again twice a minute. And each pass is judged once, not once going busy and once
    /// going idle.
    @Test func passesThatFindNothingLeaveTheNodeInSync() async throws {
        // Requests a serves b: changes feeds (two per pull pass: the long poll that ends empty,
        // then the pass's own read) and digests (one per judgement).
        let asked = Mutex(["_changes": 0, "_digest": 0]), events = Events()
        // Two passes a second. Not 200 ms: a pass would then start as each judgement is made,
        // 200 ms (the audit's settling time) after the last one ended, and the board would take
        // every judgement of in sync for one that the running pass overtook.
        let faults = FaultInjector({ method, path in
            let kind = path.hasSuffix("/_digest") ? "_digest" : path.hasSuffix("/_changes") ? "_changes" : nil
            if let kind { asked.withLock { $0[kind, default: 0] += 1 } }
            return nil
        }, longPollLimit: .milliseconds(500))
        let (a, b) = try await pairedInSync(faults: faults, events: events)
        func sync() -> MeshPeer.CollectionSync? { Self.sync(b) }
        func count(_ kind: String) -> Int { asked.withLock { $0[kind] ?? 0 } }

        let before = asked.withLock { $0 }
        // Each empty long poll is followed by a pass, which reads the source's changes.
        #expect(try await eventually { count("_changes") >= (before["_changes"] ?? 0) + 20 })
        #expect(try await eventually { sync()?.state == .inSync }, "\(String(describing: sync()))")
        let passes = (count("_changes") - (before["_changes"] ?? 0)) / 2, judgements = count("_digest") - (before["_digest"] ?? 0)
        #expect(events.all == ["in_sync"], "\(passes) passes")
        // About one judgement per pass (a pass slower than the audit's settling time may get two).
        #expect(judgements * 2 <= passes * 3 + 4, "\(passes) passes judged \(judgements) times")
        #expect(try b.collection().document(id: "first") != nil)
        await b.mesh.stop()
        await a.mesh.stop()
    }

    /// Node a, holding one document and serving with `faults`, and node b, paired with it and
    /// checking its sync every 200 ms (its events go to `events`), once b says it is in sync.
    /// A write that b's long poll brings is judged in sync by the root that the long poll's
    /// answer carried: b asks a for no `_digest`. (A mesh's every write wakes such a pass in
    /// each replication, and their sync checks were half the requests it cost.)
    @Test func aPassALongPollStartedIsJudgedByItsAnswersRoot() async throws {
        let digests = Mutex(0), events = Events()
        let faults = FaultInjector({ _, path in
            if path.hasSuffix("/_digest") { digests.withLock { $0 += 1 } }
            return nil
        })
        // Looks of the audit's own (15 x 10 s while in sync) do not come during the test.
        let (a, b) = try await pairedInSync(faults: faults, events: events, checkInterval: .seconds(10))
        func sync() -> MeshPeer.CollectionSync? { Self.sync(b) }
        let before = digests.withLock { $0 }
        for n in 1...4 {
            let judged = sync()?.lastInSync
            try a.collection().save(try MutableDocument(id: "w-\(n)", data: ["n": n]))
            #expect(try await eventually { try b.collection().document(id: "w-\(n)") != nil && sync()?.state == .inSync && sync()?.lastInSync != judged },
                    "\(String(describing: sync()))")
        }
        #expect(digests.withLock { $0 } == before, "b asked a's digest \(digests.withLock { $0 } - before) times for 4 writes")
        #expect(events.all == ["in_sync"])
        await b.mesh.stop()
        await a.mesh.stop()
    }

    private func pairedInSync(faults: FaultInjector, events: Events, checkInterval: Duration = .milliseconds(200)) async throws -> (a: Node, b: Node) {
        let a = try Node(name: "a") { $0.faultInjector = faults }
        let b = try Node(name: "b") {
            $0.syncCheckInterval = checkInterval
            $0.onEvent = events.add
        }
        try a.collection().save(try MutableDocument(id: "first", data: ["n": 1]))
        try await a.mesh.start()
        try await b.mesh.start()
        try await b.mesh.pair(with: try #require(a.mesh.pairingURL))
        #expect(try await eventually { Self.sync(b)?.state == .inSync }, "\(String(describing: Self.sync(b)))")
        return (a, b)
    }

    /// How b's replication of `default` with its one peer stands.
    private static func sync(_ b: Node) -> MeshPeer.CollectionSync? { b.mesh.peers.first?.collections[.database("default")] }

    private func text(_ node: Node, _ path: String) async throws -> String { try await node.curl(path) }

    private func get(_ node: Node, _ path: String) async throws -> DocumentValue {
        try DocumentValue(json: try await text(node, path))
    }
}
