import Foundation
import Synchronization
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Replications pulling into one collection fetch each revision once: one waits for the
/// other's fetch, and fetches for itself only when that fetch fails.
@Suite struct SharedFetchTests {
    typealias Peer = ReplicatorTests.Peer

    /// A pull-only configuration into `peer` from `url`, trying once.
    static func pull(into peer: Peer, from url: URL) -> ReplicatorConfiguration {
        var config = ReplicatorConfiguration(collection: peer.collection, target: .url(url))
        config.replicatorType = .pull
        config.maxAttempts = 1
        return config
    }

    /// Copies every revision of `source` into `target` (so both hold the same revisions).
    static func copy(_ source: DocumentCollection, to target: DocumentCollection) async throws {
        var config = ReplicatorConfiguration(collection: source, target: .collection(target))
        config.replicatorType = .push
        _ = try await Replicator(config: config).runOnce()
    }

    /// Polls `condition` every 5 ms for at most 180 s; false if it never held. (In CI on a
    /// 2-core machine a task a test starts waited over a minute behind the run's other tests.)
    static func eventually(_ condition: () throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(180)
        while Date() < deadline {
            if try condition() { return true }
            try await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    /// A registry of its own, and two replication runs into `peer`'s collection.
    static func twoRuns(into peer: Peer) throws -> (InFlightRevisions, InFlightRevisions.Owner, InFlightRevisions.Owner) {
        let registry = InFlightRevisions()
        return (registry, try #require(registry.owner(for: peer.collection)), try #require(registry.owner(for: peer.collection)))
    }

    /// `waiting` claims `wanted`, which other runs hold, and waits for each revision (a task each,
    /// in the order claimed); returns the keys and the waits once every wait is registered.
    static func waits(for wanted: [WantedRevisions], by waiting: InFlightRevisions.Owner, in registry: InFlightRevisions,
                      _ peer: Peer) async throws -> (keys: [InFlightRevisions.Key], waits: [Task<WireRevision?, Never>]) {
        let before = registry.held(in: peer.collection).waiters
        let keys = registry.claim(wanted, by: waiting).theirs
        let waits = keys.map { key in Task { await registry.result(of: key) } }
        #expect(try await eventually { registry.held(in: peer.collection).waiters == before + keys.count })
        return (keys, waits)
    }

    /// Small revisions as a peer sends them, one per (id, rev).
    static func revisions(_ pairs: [(id: String, rev: String)]) throws -> [WireRevision] {
        try pairs.map { try WireRevision(json: #"{"_id":"\#($0.id)","_rev":"\#($0.rev)","n":1}"#) }
    }

    @Test func aRevisionBeingFetchedFromOnePeerIsNotFetchedFromAnother() async throws {
        let slowAsked = Mutex(false)
        let waited = Mutex<DocumentCollection?>(nil)
        // The first peer answers once the second pull waits for it (or after 60 s).
        let slow = try await ListenerHarness(faultInjector: FaultInjector(hold: { _, path in
            guard path.hasSuffix("/_bulk_get") else { return }
            slowAsked.withLock { $0 = true }
            _ = try? await Self.eventually { waited.withLock { $0 }.map { InFlightRevisions.shared.held(in: $0).waiters > 0 } ?? false }
        }))
        let served = Mutex<[String]>([])
        let other = try await ListenerHarness(faultInjector: FaultInjector { _, path in
            served.withLock { $0.append(path) }
            return nil
        })
        try await withCleanup({ await slow.shutdown(); await other.shutdown() }) {
            let origin = try #require(try slow.node.database("db", create: true)?.defaultCollection())
            let body = String(repeating: "0123456789abcdef", count: 4096)
            try origin.save(MutableDocument(id: "shared", data: ["body": body]))
            try await Self.copy(origin, to: try #require(try other.node.database("db", create: true)?.defaultCollection()))

            let peer = try Peer()
            waited.withLock { $0 = peer.collection }
            let first = Task { try await Replicator(config: Self.pull(into: peer, from: try ReplicatorTests.pairingURL(slow))).runOnce() }
            #expect(try await Self.eventually { slowAsked.withLock { $0 } }, "the first pull never asked for the document")
            let before = other.listener.status.bytesSent
            let second = try await Replicator(config: Self.pull(into: peer, from: try ReplicatorTests.pairingURL(other))).runOnce()
            let sentBySecond = other.listener.status.bytesSent - before
            #expect(try await first.value.pulled == 1)
            #expect(second.pulled == 1, "the second pull stores what the first fetched")
            #expect(!served.withLock { $0 }.contains { $0.hasSuffix("/_bulk_get") }, "fetched twice: \(served.withLock { $0 })")
            #expect(sentBySecond < 16_000, "the 64 KB body crossed twice: the second peer sent \(sentBySecond) bytes")
            #expect(try peer.collection.document(id: "shared")?.string(forKey: "body") == body)
            #expect(InFlightRevisions.shared.held(in: peer.collection).revisions == 0, "nothing is held once both are stored")
        }
    }

    @Test func aCancelledWaitEndsWithoutTheFetch() async throws {
        let peer = try Peer()
        let (registry, fetching, waiting) = try Self.twoRuns(into: peer)
        let wanted = [WantedRevisions(id: "d", revs: ["1-a"], attsSince: [])]
        #expect(registry.claim(wanted, by: fetching).mine.count == 1)
        let (theirs, waits) = try await Self.waits(for: wanted, by: waiting, in: registry, peer)
        #expect(theirs.count == 1)
        let wait = try #require(waits.first)
        wait.cancel()
        #expect(await wait.value == nil, "a stopped replication fetches nothing it waited for")
        #expect(registry.held(in: peer.collection).waiters == 0)
        registry.release(fetching)
        #expect(registry.held(in: peer.collection).revisions == 0)
    }

    /// A peer's answer out of the order asked and short of one revision: each delivered
    /// revision reaches its waiter, the missing one's waiter is told to fetch it itself, and
    /// what was stored is let go.
    @Test(.timeLimit(.minutes(1))) func anAnswerOutOfOrderAndShortSettlesEveryClaim() async throws {
        let peer = try Peer()
        let (registry, fetching, waiting) = try Self.twoRuns(into: peer)
        let wanted = [WantedRevisions(id: "a", revs: ["1-a"], attsSince: []), WantedRevisions(id: "b", revs: ["1-b", "2-b"], attsSince: []),
                      WantedRevisions(id: "c", revs: ["1-c"], attsSince: [])]
        let mine = registry.claim(wanted, by: fetching).mine
        #expect(mine.flatMap(\.revs) == ["1-a", "1-b", "2-b", "1-c"])
        let (theirs, waits) = try await Self.waits(for: wanted, by: waiting, in: registry, peer)
        #expect(theirs.map(\.rev) == ["1-a", "1-b", "2-b", "1-c"])
        #expect(registry.claim(wanted, by: fetching).mine.flatMap(\.revs) == ["1-a", "1-b", "2-b", "1-c"], "a retried claim stays this run's")
        #expect(registry.held(in: peer.collection).waiters == 4, "and keeps its waiters")
        let delivered = try Self.revisions([("c", "1-c"), ("a", "1-a"), ("b", "2-b")])
        registry.fetched(delivered, for: mine, by: fetching)
        var results: [String?] = []
        for wait in waits { results.append(await wait.value?.rev) }
        #expect(results == ["1-a", nil, "2-b", "1-c"])
        #expect(registry.held(in: peer.collection).revisions == 3, "the missing one is released, the others held until stored")
        #expect(registry.claim([WantedRevisions(id: "b", revs: ["1-b"], attsSince: [])], by: waiting).mine.count == 1)
        registry.stored(delivered, by: fetching)
        #expect(registry.held(in: peer.collection).revisions == 1, "only the waiting run's own claim is left")
        registry.release(waiting)
        #expect(registry.held(in: peer.collection).revisions == 0)
    }

    /// Revisions a run received in its long poll's rows are held until it stores them: another
    /// run that lacks one takes it from here; one another run is fetching stays that run's, and
    /// this run's own fetch of one keeps its waiters.
    @Test(.timeLimit(.minutes(1))) func receivedRevisionsAreHeldUntilStored() async throws {
        let peer = try Peer()
        let (registry, receiving, other) = try Self.twoRuns(into: peer)
        let fetchedByOther = [WantedRevisions(id: "b", revs: ["1-b"], attsSince: [])]
        #expect(registry.claim(fetchedByOther, by: other).mine.count == 1)
        let ownFetch = [WantedRevisions(id: "c", revs: ["1-c"], attsSince: [])]
        #expect(registry.claim(ownFetch, by: receiving).mine.count == 1)
        let wait = try #require(try await Self.waits(for: ownFetch, by: other, in: registry, peer).waits.first)

        let carried = try Self.revisions([("a", "1-a"), ("b", "1-b"), ("c", "1-c")])
        registry.received(carried, by: receiving)
        let held = registry.held(in: peer.collection)
        #expect(held.revisions == 3 && held.waiters == 1, "c's fetch kept its waiter")
        let taken = registry.claim([WantedRevisions(id: "a", revs: ["1-a"], attsSince: [])], by: other)
        #expect(taken.mine.isEmpty && taken.theirs.count == 1)
        #expect(await registry.result(of: try #require(taken.theirs.first))?.rev == "1-a", "another run takes a received revision")
        registry.failed(ownFetch, by: receiving)
        #expect(await wait.value == nil)

        registry.stored(carried, by: receiving)
        #expect(registry.held(in: peer.collection).revisions == 1, "only the other run's fetch of b is left")
        registry.release(other)
        #expect(registry.held(in: peer.collection).revisions == 0)
    }

    /// The peer a revision is being fetched from is killed (-9) mid-fetch: the replication that
    /// waited for that fetch brings the revision from its own peer, attachment and all.
    @Test func aWaitingPullFetchesItselfWhenThePeerFetchedFromIsKilled() async throws {
        let served = Mutex<[String]>([])
        let other = try await ListenerHarness(faultInjector: FaultInjector { _, path in
            served.withLock { $0.append(path) }
            return nil
        })
        try await withCleanup({ await other.shutdown() }) {
            let origin = try #require(try other.node.database("db", create: true)?.defaultCollection())
            let content = Data((0..<(16 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 9) })
            let doc = MutableDocument(id: "video")
            doc.setBlob(Blob(contentType: "application/octet-stream", data: content), forKey: "clip")
            try origin.save(doc)

            // The node to be killed holds the same revision, and serves it from a process of its own.
            let killedDirectory = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-killed-\(UUID().uuidString)")
            defer { try? FileManager.default.removeItem(at: killedDirectory) }
            let staged = try NodeDirectory(url: killedDirectory)
            try await Self.copy(origin, to: try #require(try staged.database("db", create: true)?.defaultCollection()))
            staged.closeAll()
            let node = try ServeProcess(arguments: ["--host", "127.0.0.1", "--user", "ann", "--no-advertise", "--no-browse", "--qr", "none"],
                                        directory: killedDirectory, environment: ["SYNCNODE_PASSWORD": "pw-killed"])
            defer { _ = node.stop(keepingDirectory: true) }
            let base = try #require(URL(string: "https://127.0.0.1:\(node.port)/"))
            let query = Dictionary(uniqueKeysWithValues: (node.url.queryItems ?? []).map { ($0.name, $0.value ?? "") })
            let killedURL = PairingURL(base: base, database: "db", user: "ann", password: "pw-killed",
                                       uuid: try #require(query["uuid"]), fingerprint: query["fp"]).url

            let peer = try Peer()
            let first = Task { try await Replicator(config: Self.pull(into: peer, from: killedURL)).runOnce() }
            // Stopped as soon as the first pull claims the revision: the 16 MB are still to come.
            #expect(try await Self.eventually { InFlightRevisions.shared.held(in: peer.collection).revisions > 0 })
            kill(node.process.processIdentifier, SIGSTOP)
            let second = Task { try await Replicator(config: Self.pull(into: peer, from: try ReplicatorTests.pairingURL(other))).runOnce() }
            #expect(try await Self.eventually { InFlightRevisions.shared.held(in: peer.collection).waiters > 0 },
                    "the second pull did not wait for the first one's fetch")
            #expect(!served.withLock { $0 }.contains { $0.hasSuffix("/_bulk_get") }, "the second pull fetched while the first was fetching")
            kill(node.process.processIdentifier, SIGKILL)

            #expect(try await second.value.pulled == 1)
            await #expect(throws: (any Error).self) { try await first.value }
            #expect(served.withLock { $0 }.contains { $0.hasSuffix("/_bulk_get") }, "the second pull fetched the revision itself")
            #expect(try peer.collection.document(id: "video")?.blob(forKey: "clip")?.content == content)
            let held = InFlightRevisions.shared.held(in: peer.collection)
            #expect(held.revisions == 0 && held.waiters == 0, "\(held)")
        }
    }
}
