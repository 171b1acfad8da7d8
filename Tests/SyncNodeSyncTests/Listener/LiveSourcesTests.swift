import Foundation
import Synchronization
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync
import SyncNodeTestSupport

/// `live_sources`: a long poll is not woken by a change this node pulled from a peer its asker
/// already pulls from live, and a continuous pull names its live sources.
@Suite struct LiveSourcesTests {
    /// The long poll names `node-b/db`. A change pulled from there does not end it at once (it
    /// would, 250 ms later); a local write 100 ms later does, and the answer carries both. Without
    /// the name, the pulled change ends it.
    @Test func aChangePulledFromALiveSourceWaitsForTheNextWake() async throws {
        let arrived = Mutex(0)
        let h = try await ListenerHarness(faultInjector: FaultInjector { _, path in
            if path.hasSuffix("/_changes") { arrived.withLock { $0 += 1 } }
            return nil
        })
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let c = try #require(try h.node.database("db")).defaultCollection()
            let sources = #"["node-b/db","node-c/db"]"#.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let covered = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=0&timeout=30000&live_sources=\(sources)") }
            let plain = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=0&timeout=30000") }
            #expect(try await eventually(within: 30) { arrived.withLock { $0 } == 2 })
            // Both are waiting (each reads the empty feed once, then waits; a second re-reads).
            try await Task.sleep(for: .milliseconds(200))
            try c.insertRevision(id: "pulled", history: ["1-aaaa"], deleted: false, body: ["n": 1],
                                 author: WriteAuthor(origin: .replication(peer: "node-b/db")))
            try await Task.sleep(for: .milliseconds(100))
            try c.save(MutableDocument(id: "local"))
            #expect(try await plain.value["results"]?.array?.first?["id"]?.stringValue == "pulled")
            let answer = try await covered.value
            #expect(answer.status == 200)
            #expect(answer["results"]?.array?.compactMap { $0["id"]?.stringValue } == ["pulled", "local"])

            let bad = try await h.request(.GET, "/db/_changes?feed=longpoll&live_sources=%7B%7D")
            #expect(bad.status == 400 && bad["reason"]?.stringValue?.contains("live_sources") == true)
        }
    }

    /// A continuous pull counts as a live source while it waits for more, caught up, and stops
    /// counting when it stops.
    @Test func aCaughtUpContinuousPullIsALiveSource() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let origin = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try origin.save(MutableDocument(id: "a"))
            let peer = try ReplicatorTests.Peer()
            let replicator = try await ContinuousPassTests.caughtUpPull(into: peer, from: h, last: "a")
            #expect(try await eventually(within: 30) { LivePulls.shared.sources(of: peer.collection, except: "").contains { $0.hasSuffix("/db") } })
            let named = LivePulls.shared.sources(of: peer.collection, except: "")
            #expect(named.count == 1)
            #expect(LivePulls.shared.sources(of: peer.collection, except: try #require(named.first)).isEmpty, "the peer asked is left out")
            replicator.stop()
            #expect(try await eventually(within: 30) { LivePulls.shared.sources(of: peer.collection, except: "").isEmpty })
        }
    }
}
