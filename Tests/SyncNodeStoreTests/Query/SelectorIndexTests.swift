import Foundation
import Testing
@testable import SyncNodeStore

/// Selector indexes: a changes feed filtered by a selector reads the index built for it, and
/// answers exactly what it answers without one, whatever the writes in between.
@Suite struct SelectorIndexTests {
    /// Documents `d0`..., each in store `s(i % 10)`, with a number `n = i`.
    private func seeded(_ count: Int) throws -> (TempDirectory, DocumentCollection) {
        let dir = try TempDirectory()
        let c = try dir.open().defaultCollection()
        try c.database.inBatch {
            for i in 0..<count { try c.save(try MutableDocument(id: "d\(i)", data: ["store": "s\(i % 10)", "n": i])) }
        }
        return (dir, c)
    }

    /// The changes after `since` whose current body `matches`, in sequence order, found without
    /// any selector: every change read and tested here.
    private func reference(_ c: DocumentCollection, since: Int64, _ matches: (DocumentValue) -> Bool) throws -> [String] {
        try c.changes(since: since).compactMap { change in
            guard let doc = try c.document(id: change.id) else { return nil }
            return matches(try DocumentValue(json: doc.toJSON())) ? change.id : nil
        }
    }

    /// The SQL name of `c`'s index `name`, as query plans show it.
    private func sqlName(_ name: String, in c: DocumentCollection) throws -> String {
        try #require(try c.database.read { db in try IndexCatalog.find(db, collectionID: c.tableID, name: name) }).sqlName(collectionID: c.tableID)
    }

    @Test func theFeedReadsTheIndexForTheSameSelector() throws {
        let (dir, c) = try seeded(200)
        defer { withExtendedLifetime(dir) {} }
        let selector: DocumentValue = ["store": "s7"]
        let before = try c.changesPlan(matching: ChangeSelector(selector, for: c))
        try c.createIndex(SelectorIndexConfiguration(selector), name: "store-s7")
        let storeName = try sqlName("store-s7", in: c)
        #expect(!before.contains(storeName))
        #expect(try c.changesPlan(matching: ChangeSelector(selector, for: c)).contains("USING INDEX \(storeName)"))
        // Another selector does not read it; member order does not make a selector another.
        #expect(try !c.changesPlan(matching: ChangeSelector(["store": "s8"], for: c)).contains(storeName))
        let both: DocumentValue = ["store": "s7", "n": ["$gt": 100]]
        try c.createIndex(SelectorIndexConfiguration(both), name: "both")
        let reordered = try DocumentValue(json: #"{"n": {"$gt": 100}, "store": "s7"}"#)
        let bothName = try sqlName("both", in: c)
        #expect(try c.changesPlan(matching: ChangeSelector(reordered, for: c)).contains("USING INDEX \(bothName)"))
        #expect(try c.changes(since: 0, matching: ChangeSelector(reordered, for: c)).entries.map(\.id) == (107..<200).filter { $0 % 10 == 7 }.map { "d\($0)" })
        // Gone with its index.
        try c.deleteIndex(name: "store-s7")
        #expect(try !c.changesPlan(matching: ChangeSelector(selector, for: c)).contains(storeName))
    }

    /// Random saves, updates moving documents in and out, deletions and purges: the indexed
    /// feed answers as the reference does, from every point.
    @Test func theIndexedFeedMatchesTheReferenceUnderWrites() throws {
        let (dir, c) = try seeded(300)
        let selector: DocumentValue = ["n": ["$mod": [10, 3]]]
        try c.createIndex(SelectorIndexConfiguration(selector), name: "mod")
        var random = SystemRandomNumberGenerator()
        for round in 0..<400 {
            let id = "d\(Int.random(in: 0..<350, using: &random))"
            switch Int.random(in: 0..<10, using: &random) {
            case 0: if let doc = try c.document(id: id) { try c.delete(doc) }
            case 1: try? c.purge(id: id)
            default: try c.save(try MutableDocument(id: id, data: ["n": Int.random(in: 0..<100, using: &random), "round": round]))
            }
        }
        let matches: (DocumentValue) -> Bool = { body in
            guard case .dictionary(let d) = body, case .int(let n)? = d["n"] else { return false }
            return n % 10 == 3
        }
        let reopened = try dir.open().defaultCollection()
        #expect(try reopened.changesPlan(matching: ChangeSelector(selector, for: reopened)).contains("USING INDEX \(try sqlName("mod", in: reopened))"))
        let last = Int64(try reopened.changes(since: 0).last?.sequence ?? 0)
        for since in stride(from: Int64(0), through: last, by: Int(max(1, last / 7))) {
            let feed = try reopened.changes(since: since, matching: ChangeSelector(selector, for: reopened)).entries.map(\.id)
            #expect(feed == (try reference(reopened, since: since, matches)), "since \(since)")
        }
    }

    @Test func selectorsThatCannotBeIndexedAreRefused() throws {
        let (dir, c) = try seeded(10)
        defer { withExtendedLifetime(dir) {} }
        for bad: DocumentValue in [[:], ["tags": ["$elemMatch": ["$eq": "a"]]], ["tags": ["$all": ["a"]]], ["$or": "x"]] {
            #expect(throws: StoreError.self, "\(bad.toJSON())") { try c.createIndex(SelectorIndexConfiguration(bad), name: "bad") }
        }
        #expect(try c.indexes.isEmpty)
        // The same definition twice is one index; another under the same name is refused.
        try c.createIndex(SelectorIndexConfiguration(["store": "s1"]), name: "s1")
        try c.createIndex(SelectorIndexConfiguration(["store": "s1"]), name: "s1")
        #expect(throws: StoreError.self) { try c.createIndex(SelectorIndexConfiguration(["store": "s2"]), name: "s1") }
        #expect(try c.indexes == ["s1"])
    }
}
