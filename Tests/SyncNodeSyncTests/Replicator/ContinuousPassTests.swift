import Foundation
import Synchronization
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// What a continuous pull asks its peer for each change once it is caught up: the long poll
/// that wakes it brings the change, and the pass goes on from the last pass's checkpoints.
@Suite struct ContinuousPassTests {
    typealias Peer = ReplicatorTests.Peer

    /// A continuous pull into `peer` from `h`'s `db` (a one-minute heartbeat unless told), started,
    /// once it holds document `last` and has gone idle (its first pass saved its checkpoint).
    static func caughtUpPull(into peer: Peer, from h: ListenerHarness, last: String, heartbeat: Duration = .seconds(60)) async throws -> Replicator {
        var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
        config.replicatorType = .pull
        config.continuous = true
        config.heartbeat = heartbeat
        config.readTimeout = .seconds(90)
        let replicator = Replicator(config: config)
        replicator.start()
        #expect(try await SharedFetchTests.eventually { try peer.collection.document(id: last) != nil && replicator.status.activity == .idle })
        return replicator
    }

    /// Runs `body` with a node whose requests are logged, its `db`, and a peer whose continuous
    /// pull from it is caught up (with its document `first`); the log starts after that.
    static func withCaughtUpPull(_ body: (ListenerHarness, DocumentCollection, Peer, RequestLog) async throws -> Void) async throws {
        let (h, served) = try await RequestLog.harness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "first"))
            let peer = try Peer()
            let replicator = try await caughtUpPull(into: peer, from: h, last: "first")
            defer { replicator.stop() }
            served.reset()
            try await body(h, remote, peer, served)
        }
    }

    @Test func aWokenPassAsksNeitherForTheChangesAgainNorForCheckpoints() async throws {
        try await Self.withCaughtUpPull { h, remote, peer, asked in

            for i in 0..<5 {
                try remote.save(MutableDocument(id: "d\(i)", data: ["i": i]))
                #expect(try await SharedFetchTests.eventually { try peer.collection.document(id: "d\(i)") != nil })
            }
            // The last checkpoint is saved after its document is stored: a loaded machine may
            // take longer than a fixed pause (it did, once, in CI). Wait for it, then a little
            // for any request that should not come.
            _ = try await SharedFetchTests.eventually { asked.all.filter { $0.hasPrefix("PUT") && $0.contains("/_local/") }.count >= 5 }
            try await Task.sleep(for: .milliseconds(200))
            let requests = asked.all.filter { $0.hasSuffix("/_changes") || $0.contains("/_local/") }
            // Per change: one long poll (the one that brought the first may have been asked for
            // before the count began; the last one waits now) and one checkpoint saved on the
            // source; no checkpoint read, no second read of the feed (before: ten or eleven feed
            // reads and five checkpoint reads).
            #expect((5...6).contains(requests.filter { $0.hasSuffix("_changes") }.count), "\(requests)")
            #expect(requests.filter { $0.hasPrefix("GET") && !$0.hasSuffix("_changes") }.isEmpty, "\(requests)")
            #expect(requests.filter { $0.hasPrefix("PUT") }.count == 5, "\(requests)")
            #expect(try ReplicatorTests.state(peer.collection) == ReplicatorTests.state(remote))
        }
    }

    /// An idle pull's heartbeat: its long poll ends empty, and the pass that follows reads the
    /// checkpoints again (a database made again is noticed) but not the feed, which that answer
    /// has just read (it did: two feed reads a heartbeat, per peer, in an idle mesh). The
    /// answer's digest root then spares the sync check its request for the peer's.
    @Test func anIdleHeartbeatReadsTheFeedOnce() async throws {
        let (h, served) = try await RequestLog.harness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "first"))
            let peer = try Peer()
            let replicator = try await Self.caughtUpPull(into: peer, from: h, last: "first", heartbeat: .seconds(1))
            defer { replicator.stop() }
            served.reset()
            func reads(_ path: String) -> Int { served.all.filter { $0.hasPrefix("GET") && $0.contains(path) }.count }
            #expect(try await SharedFetchTests.eventually { reads("/_local/") >= 6 })
            // From the first heartbeat's checkpoint read on: the next long poll, the next
            // heartbeat's checkpoint read, and so on. One more feed read is let pass: a long
            // poll that a loaded machine answers after the pass stopped waiting for it (the
            // pass then reads the feed itself).
            let log = served.all.drop { !$0.contains("/_local/") }
            let checkpoints = log.filter { $0.contains("/_local/") }.count
            #expect(log.filter { $0.hasSuffix("/_changes") }.count <= checkpoints + 1, "\(log)")

            var asked = true
            for _ in 0..<40 where asked {
                try await Task.sleep(for: .milliseconds(250))
                served.reset()
                let check = try await replicator.syncCheck()
                #expect(check.pending.pull == 0 && check.digestsMatch == true)
                asked = served.all.contains { $0.contains("/_digest") }
            }
            #expect(!asked, "every sync check asked for the peer's digest")
        }
    }

    /// Expects `replicator`'s sync check to find nothing pending and equal digests within two
    /// minutes (a loaded machine's passes may take that long).
    static func expectInSync(_ replicator: Replicator) async throws {
        var after = try await replicator.syncCheck()
        let deadline = ContinuousClock.now + .seconds(120)
        while !(after.pending.pull == 0 && after.digestsMatch == true), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(250))
            after = try await replicator.syncCheck()
        }
        #expect(after.pending.pull == 0 && after.digestsMatch == true, "\(after)")
    }

    /// A pass that a peer's write woke forgets the digest root the long poll before it brought:
    /// a sync check made while the pass runs (held here at its `_bulk_get`) finds the write
    /// pending. It used to find that old root equal to this side's, and said in sync.
    @Test func aSyncCheckWhileAWokenPassRunsIsNotInSync() async throws {
        let held = HeldBulkGets()
        let h = try await ListenerHarness(faultInjector: held.injector)
        try await withCleanup({ held.released.withLock { $0 = true }; await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try remote.save(MutableDocument(id: "first"))
            let peer = try Peer()
            // A heartbeat a second: each idle pass leaves its empty long poll's root behind.
            let replicator = try await Self.caughtUpPull(into: peer, from: h, last: "first", heartbeat: .seconds(1))
            defer { replicator.stop() }
            try await Task.sleep(for: .milliseconds(2500))

            try await Self.expectPendingWhileFetchHeld(held, saving: remote, into: peer, check: replicator)
        }
    }

    /// A sync check trusts no earlier look at a peer while another pull into the collection is
    /// fetching: here the relay holds a revision the source's pull is fetching (held at its
    /// `_bulk_get`), pulled from that source, so it wakes this side's long poll only a second
    /// later. The check used to take the relay's last long-poll root, equal to this side's, and
    /// say in sync with the relay for that second.
    @Test func aSyncCheckWhileAnotherPullFetchesAsksThePeer() async throws {
        let held = HeldBulkGets()
        try await Self.withSourceAndRelay(sourceFaults: held.injector, release: { held.released.withLock { $0 = true } }) { origin, peer, fromRelay, copy in
            try await Self.expectPendingWhileFetchHeld(held, saving: origin, into: peer, check: fromRelay) { try copy("large") }
        }
    }

    /// Saves document `large` in `source`, too large to come with its long-poll row, so the
    /// woken pull into `peer` asks for it (`held` holds that `_bulk_get`); then, after
    /// `meanwhile`, `replicator`'s sync check must find it pending, and once the fetch is let
    /// go, it must end in sync.
    static func expectPendingWhileFetchHeld(_ held: HeldBulkGets, saving source: DocumentCollection, into peer: Peer, check replicator: Replicator,
                                            meanwhile: () throws -> Void = {}) async throws {
        held.armed.withLock { $0 = true }
        try source.save(MutableDocument(id: "large", data: ["text": String(repeating: "x", count: 20_000)]))
        #expect(try await SharedFetchTests.eventually { held.fetching.withLock { $0 } }, "the pass never asked for the document")
        try meanwhile()
        let during = try await replicator.syncCheck()
        #expect(during.pending.pull == 1 && during.digestsMatch == false, "\(during)")

        held.released.withLock { $0 = true }
        #expect(try await SharedFetchTests.eventually { try peer.collection.document(id: "large") != nil })
        try await Self.expectInSync(replicator)
    }

    /// The same with a small revision, which comes inside the source's long-poll row (no
    /// `_bulk_get` to hold): the pull holds it from its arrival until it is stored, and a sync
    /// check with the relay meanwhile asks the relay. The pull's write is held by a validator.
    @Test func aSyncCheckWhileAnotherPullStoresACarriedRevisionAsksThePeer() async throws {
        let gate = HeldWrite(id: "small")
        try await Self.withSourceAndRelay(release: { gate.open() }) { origin, peer, fromRelay, copy in
            peer.collection.setValidator(DocumentValidator { proposed, _, _ in gate.pass(proposed.id) })
            try origin.save(MutableDocument(id: "small", data: ["n": 1]))
            #expect(try await SharedFetchTests.eventually { gate.isHolding }, "the pull never wrote the document")
            try copy("small")
            let during = try await fromRelay.syncCheck()
            #expect(during.pending.pull == 1 && during.digestsMatch == false, "\(during)")

            gate.open()
            #expect(try await SharedFetchTests.eventually { try peer.collection.document(id: "small") != nil })
            try await Self.expectInSync(fromRelay)
        }
    }

    /// Runs `body` with a source node (its requests under `sourceFaults`) and a relay, both holding
    /// document `first`, and a peer whose pulls from both are caught up: from the source live
    /// (the relay's long polls name it so), from the relay with heartbeats a second apart, so
    /// that each idle pass leaves its answer's root behind. `body` gets the source's `db`, the
    /// peer, its pull from the relay, and a function that puts a source document on the relay as
    /// pulled from the source. `release` lets go of whatever `body` holds, before the shutdown.
    static func withSourceAndRelay(
        sourceFaults: FaultInjector? = nil, release: @escaping () -> Void,
        _ body: (DocumentCollection, Peer, Replicator, (String) throws -> Void) async throws -> Void
    ) async throws {
        let source = try await ListenerHarness(faultInjector: sourceFaults)
        let relay = try await ListenerHarness()
        try await withCleanup({ release(); await source.shutdown(); await relay.shutdown() }) {
            let origin = try #require(try source.node.database("db", create: true)?.defaultCollection())
            let relayed = try #require(try relay.node.database("db", create: true)?.defaultCollection())
            func copy(_ id: String, from sourceID: String) throws {
                let stored = try #require(try origin.revision(id: id))
                try relayed.insertRevision(id: id, history: stored.history, deleted: false, body: CanonicalBody(storedJSON: stored.body ?? "{}"),
                                           author: WriteAuthor(origin: .replication(peer: sourceID)))
            }
            try origin.save(MutableDocument(id: "first"))
            try copy("first", from: "")
            let peer = try Peer()
            let fromSource = try await Self.caughtUpPull(into: peer, from: source, last: "first")
            defer { fromSource.stop() }
            let fromRelay = try await Self.caughtUpPull(into: peer, from: relay, last: "first", heartbeat: .seconds(1))
            defer { fromRelay.stop() }
            let sourceID = try #require(fromSource.remoteIdentity)
            #expect(LivePulls.shared.sources(of: peer.collection, except: "").contains(sourceID))
            try await Task.sleep(for: .milliseconds(2500))
            try await body(origin, peer, fromRelay) { try copy($0, from: sourceID) }
        }
    }

    /// A node's long poll carries each small revision with its row: the woken pass stores it
    /// without a `_bulk_get` (new documents, an update, a deletion), and asks for the rest (a
    /// large body, one with a blob) as before.
    @Test func aWokenPassTakesSmallRevisionsFromItsLongPoll() async throws {
        try await Self.withCaughtUpPull { _, remote, peer, served in
            func bulkGets() -> Int { served.all.filter { $0.hasSuffix("/_bulk_get") }.count }

            func winner(_ id: String, in c: DocumentCollection) throws -> String? { try c.streamedRevision(id: id, readingAtMost: 0)?.rev }
            func arrived(_ id: String) async throws -> Bool {
                let rev = try winner(id, in: remote)
                return try await SharedFetchTests.eventually { try winner(id, in: peer.collection) == rev }
            }
            for i in 0..<4 {
                try remote.save(MutableDocument(id: "d\(i)", data: ["i": i]))
                #expect(try await arrived("d\(i)"))
            }
            try remote.save(try #require(try remote.document(id: "d0")).toMutable().then { $0.setInt(10, forKey: "i") })
            #expect(try await arrived("d0"))
            try remote.delete(id: "d1")
            #expect(try await arrived("d1"))
            #expect(bulkGets() == 0, "small revisions were fetched with _bulk_get")

            try remote.save(MutableDocument(id: "large", data: ["text": String(repeating: "x", count: 20_000)]))
            #expect(try await arrived("large"))
            let photo = MutableDocument(id: "photo")
            photo.setBlob(Blob(contentType: "image/png", data: Data("pixels".utf8)), forKey: "image")
            try remote.save(photo)
            #expect(try await arrived("photo"))
            #expect(bulkGets() == 2, "a large body and a blob each need their _bulk_get")
            #expect(try ReplicatorTests.state(peer.collection) == ReplicatorTests.state(remote))
            #expect(try peer.collection.document(id: "photo")?.blob(forKey: "image")?.content == Data("pixels".utf8))
        }
    }

    /// The peer's database is deleted and made again while a continuous pull goes on from its
    /// last pass's checkpoint: every document of the new database still arrives. (Here the
    /// pull's waiting long poll ends with the old database, and the reconnect reads both sides'
    /// checkpoints; the save-time detection is `aCheckpointGoneFromThePeerIsSavedAsStartingOver`.)
    @Test func aDatabaseMadeAgainUnderItsNameIsPulledWhole() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<3 { try remote.save(MutableDocument(id: "old\(i)")) }
            let peer = try Peer()
            let replicator = try await Self.caughtUpPull(into: peer, from: h, last: "old2")
            defer { replicator.stop() }

            try h.node.deleteDatabase("db")
            let again = try #require(try h.node.database("db", create: true)?.defaultCollection())
            for i in 0..<6 { try again.save(MutableDocument(id: "new\(i)")) }
            func missing() throws -> [Int] { try (0..<6).filter { try peer.collection.document(id: "new\($0)") == nil } }
            let arrived = try await SharedFetchTests.eventually { try missing().isEmpty }
            let left = try missing()
            #expect(arrived, "missing: \(left)")
        }
    }

    /// The node's side of it: a long poll waiting on a database that is deleted ends at once with
    /// a 503 (ask again), not at its timeout, with or without a heartbeat; a continuous feed ends
    /// with its `last_seq`.
    @Test func aFeedOnADeletedDatabaseEndsAtOnce() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let listening = h.listener.accessWatch.listenerCount
            let plain = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=now&timeout=60000") }
            let beating = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=now&timeout=60000&heartbeat=500") }
            let continuous = Task { try await h.request(.GET, "/db/_changes?feed=continuous&since=now&timeout=60000") }
            #expect(try await RevocationTests.waitingFeeds(h, listening + 3), "the feeds do not wait")
            let start = ContinuousClock.now
            try h.node.deleteDatabase("db")
            let answer = try await plain.value
            #expect(answer.status == 503, "\(answer.status) \(answer.body)")
            // The head was sent: the answer breaks off, which a replicator takes as "ask again".
            await #expect(throws: (any Error).self) { try await beating.value }
            // A continuous feed ends as after its timeout: with its `last_seq`.
            let ended = try await continuous.value
            #expect(ended.status == 200 && ended.body.contains("last_seq"), "\(ended.status) \(ended.body)")
            #expect(start.duration(to: .now) < .seconds(10))
        }
    }

    /// A checkpoint this connection saved on the peer is gone when it saves the next one: it says
    /// so, and saves one that vouches for nothing, so that the next read starts over.
    @Test func aCheckpointGoneFromThePeerIsSavedAsStartingOver() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try h.node.database("db", create: true)
            let peer = try Peer()
            let url = try ReplicatorTests.pairingURL(h)
            let (remote, _) = try await HTTPRemote.connect(ReplicatorConfiguration(collection: peer.collection, target: .url(url)), url: url)
            try await withCleanup({ await remote.shutdown() }) {
                let checkpoint = ReplicationCheckpoint(session: "s", sourceLastSequence: "7")
                #expect(try await remote.saveCheckpoint("cp", checkpoint))
                #expect(try await remote.saveCheckpoint("cp", checkpoint.recording("9")))
                let rev = try #require(try await h.request(.GET, "/db/_local/cp")["_rev"]?.stringValue)
                #expect(try await h.request(.DELETE, "/db/_local/cp?rev=\(rev)").status == 200)
                #expect(try await !remote.saveCheckpoint("cp", checkpoint.recording("12")), "the loss went unnoticed")
                #expect(try await remote.checkpoint("cp")?.sourceLastSequence == "0")
            }
        }
    }
}

/// A node's `_bulk_get`s, held while ``armed`` until ``released``; ``fetching`` once one is.
final class HeldBulkGets: Sendable {
    let armed = Mutex(false), fetching = Mutex(false), released = Mutex(false)

    var injector: FaultInjector {
        FaultInjector(hold: { [self] _, path in
            guard path.hasSuffix("/_bulk_get"), armed.withLock({ $0 }) else { return }
            fetching.withLock { $0 = true }
            _ = try? await SharedFetchTests.eventually { released.withLock { $0 } }
        })
    }
}

/// A validator's gate: the first write of document `id` waits in it (inside its write
/// transaction) until ``open()``, or 30 seconds. The wait blocks the writing task's thread, one
/// of Swift's cooperative threads, and another write to the database waits behind it; its user
/// opens it in its cleanup, so the limit only bounds a test that fails before. Not shorter: in a
/// loaded whole run a sync check took over 5 s, the write went through in the middle of it, and
/// the check saw a pending pull with the digests already equal.
final class HeldWrite: Sendable {
    let id: String
    private let state = Mutex((holding: false, open: false))
    private let opened = DispatchSemaphore(value: 0)

    init(id: String) { self.id = id }

    var isHolding: Bool { state.withLock { $0.holding } }

    func pass(_ id: String) {
        let wait = state.withLock { s in
            guard id == self.id, !s.open, !s.holding else { return false }
            s.holding = true
            return true
        }
        if wait { _ = opened.wait(timeout: .now() + 30) }
    }

    func open() {
        let first = state.withLock { s in
            defer { s.open = true }
            return !s.open
        }
        if first { opened.signal() }
    }
}
