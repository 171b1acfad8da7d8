import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync
import SyncNodeTestSupport

/// `live_sources`: a long poll is not woken by a change this node pulled from a peer its asker
/// already pulls from live, and a continuous pull names its live sources.
@Suite struct LiveSourcesTests {
    /// A commit pulled from a covered source wakes the feed only after the delay; any other
    /// commit (local, or pulled from a source the asker does not name) wakes it at once.
    @Test func aChangePulledFromALiveSourceWakesLater() async throws {
        let pulled = ChangedDocument(id: "p", revisionID: "1-a", isDeleted: false, isConflicted: false, origin: .replication(peer: "node-b/db"))
        let elsewhere = ChangedDocument(id: "q", revisionID: "1-b", isDeleted: false, isConflicted: false, origin: .replication(peer: "node-x/db"))
        let local = ChangedDocument(id: "l", revisionID: "1-c", isDeleted: false, isConflicted: false, origin: .local)
        let covered: Set<String> = ["node-b/db", "node-c/db"]

        let held = ChangeSignal()
        Handlers.wake(held, for: [pulled], covered: covered, delay: .seconds(600))
        #expect(await held.wait(timeout: .zero) == false, "a covered commit woke the feed at once")
        for (documents, sources) in [([pulled, local], covered), ([elsewhere], covered), ([pulled], [])] {
            let signal = ChangeSignal()
            Handlers.wake(signal, for: documents, covered: sources, delay: .seconds(600))
            #expect(await signal.wait(timeout: .zero), "\(documents.map(\.id)) with \(sources) did not wake the feed")
        }
        let later = ChangeSignal()
        Handlers.wake(later, for: [pulled], covered: covered, delay: .milliseconds(10))
        #expect(await later.wait(timeout: .seconds(60)), "the delayed wake never came")
    }

    /// End to end: a long poll with `live_sources` answers a pulled change (with the next wake),
    /// a long poll without answers it, and a malformed `live_sources` is refused. Asked with
    /// `revisions=true`, only the one without carries the revision: the asker with has it from there.
    @Test func longPollsReadLiveSources() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let c = try #require(try h.node.database("db")).defaultCollection()
            let sources = #"["node-b/db"]"#.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""
            let listening = h.listener.accessWatch.listenerCount
            let covered = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=0&timeout=30000&revisions=true&live_sources=\(sources)") }
            let plain = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=0&timeout=30000&revisions=true") }
            // Both wait before the change: a long poll asked after it arrived cannot tell where it came from.
            #expect(try await RevocationTests.waitingFeeds(h, listening + 2))
            try c.insertRevision(id: "pulled", history: ["1-aaaa"], deleted: false, body: ["n": 1],
                                 author: WriteAuthor(origin: .replication(peer: "node-b/db")))
            let row = try await plain.value["results"]?.array?.first
            #expect(row?["id"]?.stringValue == "pulled" && row?["revision"]?["_revisions"]?["ids"] == ["aaaa"] && row?["revision"]?["n"] == 1)
            let answer = try await covered.value
            let relayed = answer["results"]?.array?.first
            #expect(answer.status == 200 && relayed?["id"]?.stringValue == "pulled" && relayed?["revision"] == nil)

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
