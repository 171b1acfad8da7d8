import Foundation
import GRDB
import Testing
@testable import SyncNodeStore

/// A horizon at fixed sequences, standing in for the sync layer's (tested with real peers in
/// `TombstoneHorizonTests`).
private struct FixedHorizon: TombstoneHorizon {
    let peers: [TombstoneHold.Peer]
    func hold(on collection: DocumentCollection) throws -> TombstoneHold { TombstoneHold(peers: peers) }
}

@Suite struct TombstoneTests {
    /// Tombstones go once older than the time to live, counted from the first pass that saw
    /// their sequence; live documents and younger tombstones stay.
    @Test func tombstonesGoOnceOlderThanTheirTimeToLive() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        for i in 0..<5 { try c.save(try MutableDocument(id: "d\(i)", data: ["i": i])) }
        try c.delete(id: "d0")
        try c.delete(id: "d1")
        let start = Date()
        db.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(100))
        #expect(try db.recordedTombstoneTimeToLive() == .seconds(100))
        var report = try #require(try db.reapTombstones(now: start.addingTimeInterval(1)).first)
        #expect(report.tombstones == 2 && report.expired == 0 && report.reaped == 0)
        try c.delete(id: "d2")
        #expect(try db.reapTombstones(now: start.addingTimeInterval(60)).first?.reaped == 0)

        // d0 and d1 were seen at +1 (or when the policy was set): past +101 they go; d2, seen at +60, stays.
        report = try #require(try db.reapTombstones(now: start.addingTimeInterval(102)).first)
        #expect(report.reaped == 2 && report.tombstones == 3 && report.waiting == 0)
        #expect(try c.deletedCount() == 1 && c.count == 2)
        #expect(try c.changes(since: 0).map(\.id).sorted() == ["d2", "d3", "d4"])
        #expect(try c.document(id: "d3") != nil)

        report = try #require(try db.reapTombstones(now: start.addingTimeInterval(161)).first)
        #expect(try report.reaped == 1 && c.deletedCount() == 0)
        // The digest forgets them too, as it forgets purged documents.
        #expect(try c.digest().count == 2)
    }

    /// A clock set back writes no note dated before an earlier one, which would make
    /// tombstones look older than they are.
    @Test func aClockSetBackDoesNotAgeTombstones() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let start = Date()
        db.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(100))
        try c.save(try MutableDocument(id: "a", data: [:]))
        _ = try db.reapTombstones(now: start.addingTimeInterval(1000))
        try c.delete(id: "a")
        // The clock is back at +10: the tombstone is not noted at +10...
        _ = try db.reapTombstones(now: start.addingTimeInterval(10))
        // ...so at +150 it is not taken for 140 seconds old.
        #expect(try db.reapTombstones(now: start.addingTimeInterval(150)).first?.reaped == 0)
        _ = try db.reapTombstones(now: start.addingTimeInterval(1001))
        #expect(try db.reapTombstones(now: start.addingTimeInterval(1102)).first?.reaped == 1)
    }

    /// The horizon holds back what a peer has not read, and the report names the peer.
    @Test func theHorizonHoldsBackWhatAPeerHasNotRead() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        for id in ["a", "b"] {
            try c.save(try MutableDocument(id: id, data: [:]))
            try c.delete(id: id)
        }
        let seqA = try #require(try c.changes(since: 0).first { $0.id == "a" }).sequence
        let start = Date()
        let behind = TombstoneHold.Peer(name: "peer:slow", sequence: seqA, note: "pulled through sequence \(seqA)")
        let ahead = TombstoneHold.Peer(name: "peer:fast", sequence: 1000, note: "pulled through sequence 1000")
        db.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(10), horizon: FixedHorizon(peers: [behind, ahead]))
        _ = try db.reapTombstones(now: start)
        let report = try #require(try db.reapTombstones(now: start.addingTimeInterval(11)).first)
        #expect(report.expired == 2 && report.reaped == 1 && report.waiting == 1)
        #expect(report.holders == ["peer:slow pulled through sequence \(seqA)"])
        #expect(try c.changes(since: 0).map(\.id) == ["b"])

        // Without a policy nothing is reaped, and a report reads without writing.
        db.tombstonePolicy = nil
        #expect(try db.reapTombstones(now: start.addingTimeInterval(1000)).isEmpty)
        #expect(try db.recordedTombstoneTimeToLive() == nil)
        let seen = try db.tombstoneReport(under: TombstonePolicy(timeToLive: .seconds(10)), now: start.addingTimeInterval(1000))
        #expect(try seen.first?.expired == 1 && seen.first?.reaped == 0 && c.deletedCount() == 1)
    }

    /// Reaped tombstones' space comes back with compaction.
    @Test func compactionReclaimsReapedTombstones() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let pad = String(repeating: "x", count: 200)
        try db.inBatch {
            for i in 0..<4000 { try c.save(try MutableDocument(id: "document-\(i)-\(pad)", data: ["i": i])) }
        }
        try db.inBatch {
            for i in 0..<4000 { try c.delete(id: "document-\(i)-\(pad)") }
        }
        try db.compact()
        // Pages, not file bytes: the WAL keeps its length until nobody reads, which a loaded
        // machine's test run cannot promise.
        func pages() throws -> Int { try db.read { try Int.fetchOne($0, sql: "PRAGMA page_count") ?? 0 } }
        let before = try pages()
        let start = Date()
        db.tombstonePolicy = TombstonePolicy(timeToLive: .seconds(1))
        _ = try db.reapTombstones(now: start)
        // The background pass (every second at this time to live) may reap some first.
        _ = try db.reapTombstones(now: start.addingTimeInterval(2))
        #expect(try c.deletedCount() == 0)
        db.tombstonePolicy = nil  // no pass beside the compaction, which would keep the WAL long
        try db.compact()
        let after = try pages()
        #expect(after < before / 2, "\(before) pages before reaping, \(after) after")
    }

    /// Local documents keep who wrote them and when; files from before keep theirs readable.
    @Test func localDocumentsKeepTheirWriter() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.putLocalDocument(id: "mine", json: "{}", rev: nil)
        try c.putLocalDocument(id: "theirs", json: #"{"a":1}"#, rev: nil, writer: "peer:x")
        let docs = try c.localDocuments().sorted { $0.id < $1.id }
        #expect(docs.map(\.writer) == [nil, "peer:x"])
        #expect(docs.allSatisfy { abs(($0.writtenAt ?? .distantPast).timeIntervalSinceNow) < 60 })
    }
}
