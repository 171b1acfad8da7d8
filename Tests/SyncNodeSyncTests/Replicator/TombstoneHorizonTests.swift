import Foundation
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// `CheckpointHorizon`: tombstones go only once every trusted peer has checkpointed past them,
/// told by the checkpoints peers write on the node when they pull, over real TLS with their
/// certificates.
@Suite struct TombstoneHorizonTests {
    /// The peer pulls from the harness's node with its certificate (`selector`: filtered).
    /// With `password`, it signs in with a password too, as mesh peers configured with one do.
    private static func pull(_ h: ListenerHarness, into collection: DocumentCollection, as identity: TLSIdentity,
                             selector: DocumentValue? = nil, password: Bool = false) async throws {
        var components = try #require(URLComponents(string: "\(h.base)/db?fp=\(try h.node.tlsIdentity().fingerprint)"))
        if password { (components.user, components.password) = (ListenerHarness.user, ListenerHarness.password) }
        let url = try #require(components.url)
        var config = ReplicatorConfiguration(collection: collection, target: .url(url))
        config.clientIdentity = identity
        config.replicatorType = .pull
        config.selector = selector
        let replicator = Replicator(config: config)
        replicator.start()
        await replicator.waitUntilStopped()
        #expect(replicator.status.error == nil)
    }

    @Test func aTombstoneGoesOnlyOnceEveryTrustedPeerHasPulledPastIt() async throws {
        try await PeerCertificateTests.withTrustedPeer { h, peer, identity in
            _ = try await h.request(.PUT, "/db")
            for id in ["a", "b"] { _ = try await h.request(.PUT, "/db/\(id)", body: #"{"v":1}"#) }
            let db = try #require(try h.node.database("db"))
            let source = try db.defaultCollection()
            let local = try #require(try peer.database("db", create: true)).defaultCollection()
            try source.delete(id: "a")
            let trust = try TrustStore(directory: h.node, trusted: [identity.fingerprint])
            let start = Date()
            db.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(3600), horizon: CheckpointHorizon(trust: trust))
            _ = try db.reapTombstones(now: start)

            // Old enough, but the peer has not pulled it: held, and the report says by whom.
            var report = try #require(try db.reapTombstones(now: start.addingTimeInterval(3601)).first)
            #expect(report.reaped == 0 && report.waiting == 1)
            #expect(report.holders.count == 1 && report.holders.first?.contains("has never checkpointed db here") == true)

            // A filtered pull's checkpoint says nothing of the changes it skipped.
            try await Self.pull(h, into: local, as: identity, selector: ["v": 2])
            #expect(try db.reapTombstones(now: start.addingTimeInterval(3602)).first?.reaped == 0)

            // A copy into another of the peer's databases says nothing of its own `db`.
            let scratch = try #require(try peer.database("scratch", create: true)).defaultCollection()
            try await Self.pull(h, into: scratch, as: identity)
            #expect(try scratch.document(id: "b") != nil)
            #expect(try db.reapTombstones(now: start.addingTimeInterval(3602)).first?.reaped == 0)

            // A full pull leaves its checkpoint here, recorded as the certificate's peer even when a
            // password signed it in: the tombstone goes.
            try await Self.pull(h, into: local, as: identity, password: true)
            #expect(try local.document(id: "a") == nil && local.document(id: "b") != nil && local.deletedCount() == 1)
            let written = try source.localDocuments().filter { $0.writer == "peer:" + identity.fingerprint.prefix(12) }
            #expect(!written.isEmpty)
            report = try #require(try db.reapTombstones(now: start.addingTimeInterval(3603)).first)
            #expect(report.reaped == 1 && report.holders.isEmpty)
            #expect(try source.deletedCount() == 0)
            // The peer keeps its tombstone; the digests, which leave tombstones out, still agree.
            #expect(try source.digest() == local.digest())

            // A second trusted peer that never comes holds the next tombstone back...
            let (other, otherDir) = try PeerCertificateTests.identity()
            defer { try? FileManager.default.removeItem(at: otherDir) }
            let otherUUID = UUID().uuidString.lowercased()
            try trust.add(fingerprint: other.fingerprint, uuid: otherUUID)
            try source.delete(id: "b")
            try await Self.pull(h, into: local, as: identity)
            _ = try db.reapTombstones(now: start.addingTimeInterval(3604))
            report = try #require(try db.reapTombstones(now: start.addingTimeInterval(7300)).first)
            #expect(report.reaped == 0 && report.waiting == 1)
            #expect(report.holders == ["peer:\(otherUUID) has never checkpointed db here"])
            // ...until it is untrusted.
            #expect(try trust.remove(fingerprint: other.fingerprint))
            #expect(try db.reapTombstones(now: start.addingTimeInterval(7301)).first?.reaped == 1)
        }
    }

    /// Checkpoints say who wrote them, in a member other replicators ignore.
    @Test func checkpointsCarryTheirOrigin() throws {
        let origin = ReplicationCheckpoint.Origin(direction: .pull, remote: "u/db", local: "db", filtered: false)
        let checkpoint = ReplicationCheckpoint(session: "s", sourceLastSequence: "7", origin: origin)
        #expect(ReplicationCheckpoint(json: checkpoint.json).origin == origin)
        // CouchDB's and PouchDB's have none; one that does not say whether it was filtered counts as filtered.
        #expect(ReplicationCheckpoint(json: ["source_last_seq": "3"]).origin == nil)
        let unsure = ReplicationCheckpoint(json: ["syncnode_origin": ["direction": "pull", "remote": "u/db", "local": "db"]])
        #expect(unsure.origin?.filtered == true)
    }
}
