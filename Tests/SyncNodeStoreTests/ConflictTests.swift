import Foundation
import Testing
@testable import SyncNodeStore

/// Conflicts as an app sees them: finding them, reading their leaves, resolving them.
@Suite struct ConflictTests {
    /// Document `d` with two live branches from `1-1111` (as two nodes' edits replicate), a
    /// document edited twice without a conflict, and one whose other branch was deleted.
    static func makeConflicts(in c: DocumentCollection) throws {
        try c.insertRevision(id: "d", history: ["1-1111"], deleted: false, body: ["v": "root"])
        try c.insertRevision(id: "d", history: ["2-bbbb", "1-1111"], deleted: false, body: ["v": "b"])
        try c.insertRevision(id: "d", history: ["2-cccc", "1-1111"], deleted: false, body: ["v": "c"])
        let plain = MutableDocument(id: "plain")
        try c.save(plain)
        plain.setInt(2, forKey: "n")
        try c.save(plain)
        try c.insertRevision(id: "settled", history: ["2-aaaa", "1-2222"], deleted: false, body: ["v": "kept"])
        try c.insertRevision(id: "settled", history: ["3-dddd", "2-bbbb", "1-2222"], deleted: true, body: [:])
    }

    static func leaves(_ c: DocumentCollection, _ id: String) throws -> [String] {
        try c.leafDocuments(id: id).map { "\($0.revisionID ?? "")\($0.isDeleted ? " deleted" : "")" }
    }

    @Test func conflictsAreListedWithEveryLeaf() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try Self.makeConflicts(in: c)
        #expect(try c.conflictedDocumentIDs() == ["d"])
        // The winner (CouchDB's order: the higher suffix at the same generation) first.
        let leaves = try c.leafDocuments(id: "d")
        #expect(leaves.map(\.revisionID) == ["2-cccc", "2-bbbb"])
        #expect(leaves.map { $0.string(forKey: "v") } == ["c", "b"])
        #expect(try c.document(id: "d")?.revisionID == "2-cccc")
        // A deleted branch is a leaf, not a conflict; a missing document has no leaves.
        #expect(try Self.leaves(c, "settled") == ["2-aaaa", "3-dddd deleted"])
        #expect(try c.leafDocuments(id: "missing").isEmpty)
    }

    /// Makes the same conflict on two databases, resolves it with `resolve` on each, and
    /// returns each one's leaves afterwards.
    static func resolvedOnTwoNodes(_ resolve: (DocumentCollection) throws -> Void) throws -> [[String]] {
        let dir = try TempDirectory()
        return try ["a", "b"].map { name in
            let db = try dir.open(name)
            defer { try? db.close() }
            let c = try db.defaultCollection()
            try makeConflicts(in: c)
            try resolve(c)
            #expect(try c.conflictedDocumentIDs().isEmpty)
            return try leaves(c, "d")
        }
    }

    /// Two nodes that keep the same side write the same tombstone: after they replicate,
    /// nothing is left to resolve.
    @Test func keepingALeafClosesTheOthersAlikeOnEveryNode() throws {
        let results = try Self.resolvedOnTwoNodes { c in
            let kept = try c.resolveConflict(id: "d", keeping: "2-bbbb")
            #expect(kept.revisionID == "2-bbbb" && kept.string(forKey: "v") == "b")
            #expect(try c.document(id: "d")?.string(forKey: "v") == "b")
        }
        #expect(results[0] == results[1])
        #expect(results[0].count == 2 && results[0][0] == "2-bbbb" && results[0][1].hasPrefix("3-") && results[0][1].hasSuffix(" deleted"))
    }

    @Test func aMergeIsAChildOfTheWinnerAlikeOnEveryNode() throws {
        let results = try Self.resolvedOnTwoNodes { c in
            // The winner's properties, with the loser's value folded in.
            let merge = try #require(try c.leafDocuments(id: "d").first).toMutable()
            merge.setString("b+c", forKey: "v")
            try merge.setValue(["b", "c"], forKey: "tags")
            let merged = try c.resolveConflict(id: "d", merged: merge)
            #expect(merged.revisionID?.hasPrefix("3-") == true && merge.revisionID == merged.revisionID)
            #expect(merged.string(forKey: "v") == "b+c" && merged.array(forKey: "tags")?.count == 2)
        }
        #expect(results[0] == results[1])
        #expect(results[0].count == 2 && results[0].filter { $0.hasSuffix(" deleted") }.count == 1)
    }

    /// Leaves that changed after the app read them (a pull brought another branch) are not
    /// resolved blindly: nothing is written and the call says so.
    @Test func aDecisionOnStaleLeavesIsRefused() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try Self.makeConflicts(in: c)
        let seen = try c.leafDocuments(id: "d")
        let merge = try #require(seen.first).toMutable()
        try c.insertRevision(id: "d", history: ["3-eeee", "2-cccc", "1-1111"], deleted: false, body: ["v": "newer"])
        let now = try Self.leaves(c, "d")
        #expect(throws: StoreError.conflict(documentID: "d")) { try c.resolveConflict(id: "d", keeping: "2-bbbb", of: seen) }
        #expect(throws: StoreError.conflict(documentID: "d")) { try c.resolveConflict(id: "d", merged: merge) }
        #expect(try Self.leaves(c, "d") == now)
        // Decided again on what is there now, it goes through.
        #expect(try c.resolveConflict(id: "d", keeping: "3-eeee", of: try c.leafDocuments(id: "d")).string(forKey: "v") == "newer")
    }

    /// What a `notFound` error thrown by `body` names; nil for any other outcome.
    static func subjectNotFound(_ body: () throws -> Void) -> StoreError.Subject? {
        do { try body() } catch StoreError.notFound(let subject, _) { return subject } catch {}
        return nil
    }

    @Test func wrongRequestsAreRefusedAndChangeNothing() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try Self.makeConflicts(in: c)
        let before = try Self.leaves(c, "d")
        #expect(Self.subjectNotFound { try c.resolveConflict(id: "d", keeping: "2-ffff") } == .revision)
        #expect(Self.subjectNotFound { try c.resolveConflict(id: "settled", keeping: "3-dddd") } == .revision)
        #expect(Self.subjectNotFound { try c.resolveConflict(id: "missing", keeping: "1-1111") } == .document)
        #expect(throws: StoreError.reservedProperty("_secret")) {
            try c.resolveConflict(id: "d", merged: try MutableDocument(id: "d", json: #"{"_secret":1}"#))
        }
        #expect(throws: StoreError.self) { try c.resolveConflict(id: "d", merged: MutableDocument(id: "other")) }
        #expect(try Self.leaves(c, "d") == before)
        #expect(try c.conflictedDocumentIDs() == ["d"])
        // Keeping the only live leaf of a document without a conflict changes nothing.
        let plain = try #require(try c.document(id: "plain"))
        #expect(try c.resolveConflict(id: "plain", keeping: plain.revisionID ?? "").revisionID == plain.revisionID)
    }
}
