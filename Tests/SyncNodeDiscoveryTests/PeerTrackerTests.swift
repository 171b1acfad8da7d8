import Foundation
import Synchronization
import SyncNodeSync
import Testing
@testable import SyncNodeDiscovery

/// The tracker between Avahi and the peer events, fed sightings of real
/// listeners on loopback (what the Avahi side would report): a peer is
/// reported once, only when it answers as advertised, and gone when it goes.
@Suite struct PeerTrackerTests {
    /// A real node: data directory, HTTPS listener with Basic auth.
    final class Node: Sendable {
        let directory: URL
        let node: NodeDirectory
        let listener: Listener

        init() async throws {
            directory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-peer-\(UUID().uuidString)")
            node = try NodeDirectory(url: directory)
            listener = Listener(config: ListenerConfiguration(directory: node, host: "127.0.0.1", authenticator: .users(["ann": "secret"])))
            try await listener.start()
        }

        func record(name: String = "n", fingerprint: String? = nil, uuid: String? = nil) throws -> ServiceRecord {
            ServiceRecord(name: name, port: try #require(listener.port), uuid: uuid ?? node.uuid, keyspaces: [.database("default")], tls: true,
                          fingerprint: fingerprint ?? listener.tlsIdentity?.fingerprint, requiresAuth: true)
        }

        func shutdown() async {
            await listener.stop()
            node.closeAll()
            try? FileManager.default.removeItem(at: directory)
        }
    }

    /// Collects events; `next` waits for one.
    final class Events: Sendable {
        let stream: AsyncStream<PeerEvent>
        let continuation: AsyncStream<PeerEvent>.Continuation
        init() { (stream, continuation) = AsyncStream.makeStream(of: PeerEvent.self) }

        /// The next event; waits returning nil are asked for with a short `limit`. The default is
        /// long because a probe of a node can wait behind the whole suite on a 2-core machine
        /// (10 s was once too short while the hostile-input campaign ran).
        func next(within limit: Duration = .seconds(40)) async -> PeerEvent? {
            await withTaskGroup(of: PeerEvent?.self) { group in
                group.addTask { var it = self.stream.makeAsyncIterator(); return await it.next() }
                group.addTask { try? await Task.sleep(for: limit); return nil }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
        }
    }

    func tracker(_ events: Events, own: String? = nil, authenticator: BasicAuthenticator? = BasicAuthenticator(username: "ann", password: "secret"),
                 isConnected: (@Sendable (String) async -> Bool)? = nil) -> PeerTracker {
        PeerTracker(
            options: .init(ownUUID: own, authenticator: authenticator, probeInterval: .milliseconds(200), probeTimeout: .seconds(2), failureLimit: 2,
                           isConnected: isConnected),
            logger: .init(label: "test"), emit: { events.continuation.yield($0) })
    }

    func key(_ name: String, interface: Int32 = 1, proto: Int32 = 0) -> Sighting.Key { .init(interface: interface, proto: proto, name: name) }

    @Test func oneConfirmedPeerPerUUIDAcrossSightings() async throws {
        let node = try await Node()
        let events = Events()
        let tracker = tracker(events)
        let record = try node.record()
        // The same node seen on two interfaces and resolved to two addresses.
        await tracker.handle(.resolved(Sighting(key: key("n", interface: 1), record: record, address: "127.0.0.1")))
        await tracker.handle(.resolved(Sighting(key: key("n", interface: 2), record: record, address: "127.0.0.2")))
        guard case .appeared(let peer)? = await events.next() else { Issue.record("no appeared event"); return }
        #expect(peer.uuid == node.node.uuid)
        #expect(peer.host == "127.0.0.1")
        #expect(await tracker.peers.count == 1)
        // Gone from one interface: still there. Gone from both: disappeared.
        await tracker.handle(.removed(key("n", interface: 1)))
        #expect(await tracker.peers.count == 1)
        await tracker.handle(.removed(key("n", interface: 2)))
        #expect(await events.next() == .disappeared(peer))
        await tracker.stop()
        await node.shutdown()
    }

    @Test func aPeerThatStopsAnsweringIsGoneThoughItsRecordLingers() async throws {
        let node = try await Node()
        let events = Events()
        let tracker = tracker(events)
        await tracker.handle(.resolved(Sighting(key: key("n"), record: try node.record(), address: "127.0.0.1")))
        guard case .appeared(let peer)? = await events.next() else { Issue.record("no appeared event"); return }
        await node.listener.stop()
        #expect(await events.next() == .disappeared(peer))
        await tracker.stop()
        await node.shutdown()
    }

    @Test func aWrongFingerprintOrUUIDIsNeverReported() async throws {
        let node = try await Node()
        let other = try await Node()
        let events = Events()
        let tracker = tracker(events)
        // Advertises another node's certificate fingerprint: the TLS check fails.
        await tracker.handle(.resolved(Sighting(key: key("a"), record: try node.record(name: "a", fingerprint: other.listener.tlsIdentity?.fingerprint), address: "127.0.0.1")))
        // Advertises another uuid than `GET /` answers.
        await tracker.handle(.resolved(Sighting(key: key("b"), record: try node.record(name: "b", uuid: "not-its-uuid"), address: "127.0.0.1")))
        #expect(await events.next(within: .seconds(1.5)) == nil)
        #expect(await tracker.peers.isEmpty)
        await tracker.stop()
        await node.shutdown()
        await other.shutdown()
    }

    @Test func itsOwnServiceIsIgnored() async throws {
        let node = try await Node()
        let events = Events()
        let tracker = tracker(events, own: node.node.uuid)
        await tracker.handle(.resolved(Sighting(key: key("self"), record: try node.record(), address: "127.0.0.1")))
        #expect(await events.next(within: .seconds(1)) == nil)
        await tracker.stop()
        await node.shutdown()
    }

    @Test func withoutCredentialsAnAuthenticatedTLSAnswerCounts() async throws {
        let node = try await Node()
        let events = Events()
        let tracker = tracker(events, authenticator: nil)
        await tracker.handle(.resolved(Sighting(key: key("n"), record: try node.record(), address: "127.0.0.1")))
        guard case .appeared? = await events.next() else { Issue.record("a peer answering 401 over its advertised certificate was not reported"); return }
        await tracker.stop()
        await node.shutdown()
    }

    /// A settled peer that holds a connection to this node is not asked `GET /`; once its
    /// connections are gone it is asked again, and reported gone when it does not answer.
    @Test func aConnectedPeerIsNotProbedUntilItsConnectionsGo() async throws {
        let node = try await Node()
        let events = Events()
        let connected = Mutex(true)
        let record = try node.record()
        let tracker = tracker(events, isConnected: { fingerprint in fingerprint == record.fingerprint && connected.withLock { $0 } })
        await tracker.handle(.resolved(Sighting(key: key("n"), record: record, address: "127.0.0.1")))
        guard case .appeared(let peer)? = await events.next() else { Issue.record("no appeared event"); return }
        /// Requests the node got in `window`, looked at after it.
        func requests(over window: Duration) async throws -> Int {
            let before = node.listener.status.totalRequests
            try await Task.sleep(for: window)
            return node.listener.status.totalRequests - before
        }
        // Probed every 200-400 ms until settled (5 answers), then never while connected: a
        // quiet second and a half comes (and could not while probed).
        var quiet = false, windows = 0
        while !quiet, windows < 20 {
            quiet = try await requests(over: .milliseconds(1500)) == 0
            windows += 1
        }
        #expect(quiet, "the tracker kept asking a connected peer")
        connected.withLock { $0 = false }
        // Asked again: two probes within 30 s (a loaded full suite once took over 3 s for them).
        let asked = node.listener.status.totalRequests, deadline = ContinuousClock.now.advanced(by: .seconds(30))
        while node.listener.status.totalRequests - asked < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(50)) }
        #expect(node.listener.status.totalRequests - asked >= 2, "the tracker did not ask a peer that is no longer connected")
        // Stopped, its connections are gone with it: asked, no answer, gone.
        await node.listener.stop()
        #expect(await events.next() == .disappeared(peer))
        await tracker.stop()
        await node.shutdown()
    }
}
