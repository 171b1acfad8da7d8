import Foundation
import Testing
@testable import SyncNodeStore

@Suite struct RevisionTests {
    @Test func sameEditOnTwoDatabasesGivesTheSameRevisionIDs() throws {
        let dir = try TempDirectory()
        let a = try dir.open("a"), b = try dir.open("b")
        defer { try? a.close(); try? b.close() }
        var revs: [[String?]] = []
        for db in [a, b] {
            let c = try db.defaultCollection()
            let doc = try MutableDocument(id: "doc", data: ["name": "x", "n": 1, "tags": ["a", "b"], "nested": ["k": 1.5]])
            try c.save(doc)
            let first = doc.revisionID
            doc.setInt(2, forKey: "n")
            try c.save(doc)
            let second = doc.revisionID
            try c.delete(id: "doc")
            revs.append([first, second, try c.revision(id: "doc")?.rev])
        }
        #expect(revs[0] == revs[1])
        #expect(revs[0][0]?.hasPrefix("1-") == true)
        #expect(revs[0][1]?.hasPrefix("2-") == true)
        #expect(revs[0][2]?.hasPrefix("3-") == true)
        #expect(a.uuid != b.uuid)
    }

    @Test func revisionIDDependsOnParentBodyAndDeletion() {
        let body = CanonicalBody(json: Array(#"{"a":1}"#.utf8))
        let r1 = RevisionID.make(parent: nil, deleted: false, body: body)
        #expect(r1 == RevisionID.make(parent: nil, deleted: false, body: body))
        #expect(r1 != RevisionID.make(parent: nil, deleted: true, body: body))
        #expect(r1 != RevisionID.make(parent: "1-x", deleted: false, body: body))
        #expect(r1 != RevisionID.make(parent: nil, deleted: false, body: CanonicalBody(json: Array(#"{"a":2}"#.utf8))))
        #expect(RevisionID.make(parent: "9-abc", deleted: false, body: body).hasPrefix("10-"))
    }

    /// Builds a tree from `(rev, parentRev, deleted)` triples.
    func tree(_ spec: [(String, String?, Bool)]) -> RevisionTree {
        var t = RevisionTree()
        for (rev, parent, deleted) in spec {
            t.add(rev: rev, parent: parent.flatMap { t.index(of: $0) }, deleted: deleted, sequence: 1)
        }
        return t
    }

    func winner(_ t: RevisionTree) -> String? { t.winner.map { t.nodes[$0].rev } }

    @Test func longestBranchWins() {
        let t = tree([("1-a", nil, false), ("2-b", "1-a", false), ("2-c", "1-a", false), ("3-c", "2-c", false)])
        #expect(winner(t) == "3-c")
        #expect(Set(t.leaves.map { t.nodes[$0].rev }) == ["2-b", "3-c"])
    }

    @Test func liveLeafBeatsLongerDeletedBranch() {
        let t = tree([("1-a", nil, false), ("2-b", "1-a", false), ("2-c", "1-a", false), ("3-c", "2-c", true)])
        #expect(winner(t) == "2-b")
    }

    @Test func allLeavesDeletedPicksTheHighestDeleted() {
        let t = tree([("1-a", nil, false), ("2-b", "1-a", true), ("2-c", "1-a", false), ("3-c", "2-c", true)])
        #expect(winner(t) == "3-c")
    }

    @Test func equalGenerationsTieBreakByASCII() {
        let t = tree([("1-a", nil, false), ("2-B", "1-a", false), ("2-a", "1-a", false), ("2-Z", "1-a", false)])
        #expect(winner(t) == "2-a")  // 'a' (0x61) sorts above 'B' and 'Z'
        // The same tree built in another order picks the same winner.
        let u = tree([("1-a", nil, false), ("2-a", "1-a", false), ("2-Z", "1-a", false), ("2-B", "1-a", false)])
        #expect(winner(u) == "2-a")
    }

    /// Pinned to values computed apart (Python's hashlib over the documented input), so the
    /// same edit keeps its ID across versions of the node.
    @Test func revisionIDsFollowTheirDefinition() {
        let body = CanonicalBody(json: Array(#"{"a":1}"#.utf8))
        #expect(RevisionID.make(parent: "1-abc", deleted: false, body: body) == "2-2ae0da8a64e73d249c73f3b878c99258")
        #expect(RevisionID.make(parent: nil, deleted: true, body: body) == "1-2a6907becf1b28dc50a9658b5b4fd368")
        #expect(RevisionID.make(parent: "9-abc", deleted: false, body: body) == "10-76dcf8b8776a73e0ca2835a4aab23ec0")
        let unhashed = CanonicalBody(json: Array(#"{"a":1}"#.utf8), hashing: false)
        #expect(RevisionID.make(parent: "1-abc", deleted: false, body: unhashed) == "2-2ae0da8a64e73d249c73f3b878c99258")
    }

    @Test func newRevisionIDsHave32HexDigits() {
        let rev = RevisionID.make(parent: nil, deleted: false, body: CanonicalBody(json: Array(#"{"a":1}"#.utf8)))
        let suffix = rev.dropFirst(2)
        #expect(rev.hasPrefix("1-"))
        #expect(suffix.count == 32)
        #expect(suffix.allSatisfy { "0123456789abcdef".contains($0) })
    }

    /// CouchDB stores a 32-hex-digit suffix as its 16 bytes and anything else
    /// as text, and compares those: the winner must be the one CouchDB picks.
    @Test func suffixesCompareAsCouchDBStoresThem() {
        let hex32 = "2-" + String(repeating: "0", count: 31) + "1"  // bytes 00 .. 01
        let hex40 = "2-" + String(repeating: "0", count: 40)        // ASCII '0' = 0x30
        // As text the 32-digit one is bigger (its 32nd character is '1', the other's '0'); as
        // CouchDB keeps them, bytes 0x00 ... are below characters 0x30 ...: the 40-digit one wins.
        #expect(RevisionID.wins((hex40, false), over: (hex32, false)))
        #expect(!RevisionID.wins((hex32, false), over: (hex40, false)))
        // A 32-digit suffix starting with f spells byte 0xff, above any ASCII character.
        let high32 = "2-f" + String(repeating: "0", count: 31)
        #expect(RevisionID.wins((high32, false), over: ("2-zzz", false)))
        // Uppercase hex is binary to CouchDB too; 32 characters that are not all hex stay text.
        #expect(RevisionID.suffixKey("1-" + String(repeating: "A", count: 32)) == [UInt8](repeating: 0xAA, count: 16))
        #expect(RevisionID.suffixKey("1-" + String(repeating: "g", count: 32)) == Array(String(repeating: "g", count: 32).utf8))
        // Between two 32-digit lowercase suffixes the byte order is the text order.
        let a = "3-" + String(repeating: "9", count: 32), b = "3-" + String(repeating: "a", count: 32)
        #expect(RevisionID.wins((b, false), over: (a, false)))
        // Deleted and generation still come first.
        #expect(RevisionID.wins((hex32, false), over: (hex40, true)))
        #expect(RevisionID.wins(("3-" + String(repeating: "0", count: 32), false), over: (high32, false)))
    }

    @Test func pruningKeepsRevsLimitGenerations() throws {
        let dir = try TempDirectory()
        // Ancestors' bodies kept, to see that pruning drops them.
        let db = try Database(name: "db", config: DatabaseConfiguration(directory: dir.url, revsLimit: 5, keepsAncestorBodies: true))
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let doc = MutableDocument(id: "d")
        for i in 0..<12 {
            doc.setInt(i, forKey: "i")
            try c.save(doc)
        }
        let rev = try #require(try c.revision(id: "d"))
        #expect(rev.rev.hasPrefix("12-"))
        #expect(rev.history.count == 5)
        #expect(rev.history.compactMap(RevisionID.generation(of:)) == [12, 11, 10, 9, 8])
        // Pruned ancestors' bodies are gone too.
        let stored = try db.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM c1_revs") }
        #expect(stored == 4)
    }

    @Test func pruningKeepsEachBranchsOwnHistory() {
        var t = tree([("1-a", nil, false), ("2-a", "1-a", false), ("3-a", "2-a", false), ("4-a", "3-a", false), ("2-b", "1-a", false)])
        let removed = t.prune(revsLimit: 2)
        // 1-a stays (within 2 of leaf 2-b); 2-a goes, and 3-a becomes a root.
        #expect(removed == ["2-a"])
        #expect(t.history(from: t.index(of: "4-a")!) == ["4-a", "3-a"])
        var u = tree([("1-a", nil, false), ("2-a", "1-a", false), ("3-a", "2-a", false), ("4-a", "3-a", false)])
        #expect(Set(u.prune(revsLimit: 2)) == ["1-a", "2-a"])
        #expect(u.history(from: u.index(of: "4-a")!) == ["4-a", "3-a"])
    }

    @Test func graftingAForeignBranchCreatesAConflictWithoutRenumbering() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        let doc = try MutableDocument(id: "d", data: ["v": 1])
        try c.save(doc)
        let r1 = try #require(doc.revisionID)
        doc.setInt(2, forKey: "v")
        try c.save(doc)
        let r2 = try #require(doc.revisionID)

        // A peer edited from r1 twice: 2-p, 3-p.
        let inserted = try c.insertRevision(id: "d", history: ["3-ppp", "2-ppp", r1], deleted: false, body: ["v": .string("peer")])
        #expect(inserted == .branched, "r2 and 3-ppp are both leaves")
        // Known revisions are not inserted twice.
        #expect(try c.insertRevision(id: "d", history: ["3-ppp", "2-ppp", r1], deleted: false, body: [:]) == .known)

        let current = try #require(try c.document(id: "d"))
        #expect(current.revisionID == "3-ppp")
        #expect(current.string(forKey: "v") == "peer")
        #expect(try c.conflictingRevisions(id: "d") == [r2])
        let leaves = try c.leafRevisions(id: "d")
        #expect(leaves.map(\.rev) == ["3-ppp", r2])
        #expect(leaves[1].body == #"{"v":2}"#)
        #expect(try c.revision(id: "d", rev: "3-ppp")?.history == ["3-ppp", "2-ppp", r1])
        #expect(try c.revision(id: "d", rev: "2-ppp")?.body == nil)

        let diff = try c.revsDiff(["d": ["3-ppp", "4-qqq", r1], "new": ["1-x"]])
        #expect(diff["d"] == RevsDiffEntry(missing: ["4-qqq"], possibleAncestors: [r2, "3-ppp"]))
        #expect(diff["new"] == RevsDiffEntry(missing: ["1-x"], possibleAncestors: []))
        #expect(try c.revsDiff(["d": [r1, r2]]).isEmpty)

        // The IDs go to SQLite as one JSON array: ones that need escaping are found all the same.
        let odd = ["quote\"d", "back\\slash", "slash/id", "ünï", "emoji 😀", "[1,2]"]
        for id in odd { try c.insertRevision(id: id, history: ["1-a"], deleted: false, body: [:]) }
        let asked = Dictionary(uniqueKeysWithValues: odd.map { ($0, ["1-a", "2-b"]) })
        #expect(try c.revsDiff(asked) == Dictionary(uniqueKeysWithValues: odd.map { ($0, RevsDiffEntry(missing: ["2-b"], possibleAncestors: ["1-a"])) }))
    }

    @Test func graftingWithNoCommonAncestorStartsANewRoot() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.insertRevision(id: "d", history: ["2-aa", "1-aa"], deleted: false, body: ["x": 1])
        try c.insertRevision(id: "d", history: ["5-bb", "4-bb"], deleted: false, body: ["x": 2])
        #expect(try c.document(id: "d")?.revisionID == "5-bb")
        #expect(try c.revision(id: "d")?.history == ["5-bb", "4-bb"])
        #expect(try c.conflictingRevisions(id: "d") == ["2-aa"])
    }

    @Test func foreignDeletionOfTheWinnerExposesTheConflict() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        #expect(try c.insertRevision(id: "d", history: ["1-a"], deleted: false, body: ["v": "root"]) == .inserted)
        #expect(try c.insertRevision(id: "d", history: ["2-b", "1-a"], deleted: false, body: ["v": "b"]) == .inserted)
        try c.insertRevision(id: "d", history: ["2-c", "1-a"], deleted: false, body: ["v": "c"])
        #expect(try c.document(id: "d")?.string(forKey: "v") == "c")
        try c.insertRevision(id: "d", history: ["3-c", "2-c"], deleted: true, body: [:])
        let doc = try #require(try c.document(id: "d"))
        #expect(doc.revisionID == "2-b")
        #expect(doc.string(forKey: "v") == "b")
    }

    /// A resolution decided on leaves that changed since (a branch pulled meanwhile) is refused
    /// whole: the new branch, which nobody looked at, must not be tombstoned.
    @Test func aResolutionOnStaleLeavesIsRefused() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try c.insertRevision(id: "d", history: ["1-a"], deleted: false, body: ["v": "root"])
        try c.insertRevision(id: "d", history: ["2-b", "1-a"], deleted: false, body: ["v": "b"])
        try c.insertRevision(id: "d", history: ["2-c", "1-a"], deleted: false, body: ["v": "c"])
        let seen = Set(try c.leafRevisions(id: "d").map(\.rev))
        try c.insertRevision(id: "d", history: ["2-e", "1-a"], deleted: false, body: ["v": "e"])
        #expect(throws: StoreError.self) { try c.resolveConflict(id: "d", winner: "2-c", mergedBody: nil, seen: seen) }
        #expect(try c.leafRevisions(id: "d").filter { !$0.deleted }.count == 3)
        // Decided again on what is there now, it goes through.
        try c.resolveConflict(id: "d", winner: "2-c", mergedBody: nil, seen: Set(try c.leafRevisions(id: "d").map(\.rev)))
        #expect(try c.leafRevisions(id: "d").filter { !$0.deleted }.map(\.rev) == ["2-c"])
    }

    @Test func malformedForeignRevisionsAreRejected() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        defer { try? db.close() }
        let c = try db.defaultCollection()
        for history in [["abc"], ["0-a"], ["2-a", "2-b"], ["3-a", "1-a"], ["1-has space"], []] {
            #expect(throws: StoreError.self) { try c.insertRevision(id: "d", history: history, deleted: false, body: [:]) }
        }
        #expect(throws: StoreError.self) { try c.insertRevision(id: "d", history: ["1-a"], deleted: false, body: ["_x": 1]) }
        #expect(try c.document(id: "d") == nil)
    }
}

/// `changeCount(since:)` (CouchDB's `pending`) follows from its last answers while nothing
/// is written; every kind of write in between must still give the exact count.
@Suite struct ChangeCountTests {
    /// What a scan of every row says.
    static func counted(_ c: DocumentCollection, since: Int64) throws -> Int {
        try c.changes(since: 0).filter { $0.sequence > since }.count
    }

    @Test func pagesAndEveryKindOfWriteBetweenThem() throws {
        let dir = try TempDirectory()
        let db = try dir.open("db")
        defer { try? db.close() }
        let c = try db.defaultCollection()
        try db.inBatch { for i in 0..<300 { try c.save(try MutableDocument(id: "d\(i)", data: ["i": i])) } }
        func check(_ since: Int64, _ note: String) throws {
            #expect(try c.changeCount(since: since) == Self.counted(c, since: since), "since \(since), \(note)")
        }
        // Pages read in order, as a replicator reads them; then a reader starting over.
        for since in stride(from: Int64(0), through: 300, by: 50) { try check(since, "paging") }
        try check(0, "from the start again")
        try check(120, "from the middle")
        // Each write between two pages, on a document the count includes: an update (its row
        // moves past the end), a new document, a deletion, a purge, an expiry; then a write inside
        // a batch that rolls back.
        let writes: [(String, () throws -> Void)] = [
            ("update", { try c.save(try MutableDocument(id: "d210", data: ["i": -1])) }),
            ("insert", { try c.save(try MutableDocument(id: "new", data: [:])) }),
            ("delete", { try c.delete(id: "d220") }),
            ("purge", { try c.purge(id: "d230") }),
            ("expiry", {
                try c.setDocumentExpiration(id: "d240", expiration: Date(timeIntervalSinceNow: -1))
                _ = try db.purgeExpired(now: Date())
            }),
        ]
        var since: Int64 = 0
        for (name, write) in writes {
            try check(since, "before \(name)")
            try write()
            try check(since, "after \(name)")
            since += 40
            try check(since, "next page after \(name)")
        }
        struct Abandon: Error {}
        #expect(throws: Abandon.self) {
            try db.inBatch {
                try c.save(try MutableDocument(id: "rolled-back", data: [:]))
                try check(0, "inside a batch")
                throw Abandon()
            }
        }
        try check(0, "after the rollback")
        try check(since, "after the rollback, later page")
    }
}
