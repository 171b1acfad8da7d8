import Foundation
import Testing
@testable import SyncNodeStore

@Suite final class IndexTests: CollectionFixture {
    var hotels: DocumentCollection { collection }

    init() throws {
        try super.init(collection: "hotels", scope: "travel")
        let rows: [(String, String, String, Int)] = [
            ("h1", "Linux applications for hotels", "A café near the station serving rides", 3),
            ("h2", "Database replication guide", "Couchbase database sync for mobile", 5),
            ("h3", "Sqlite library notes", "An embedded SQL database library on linux", 4),
            ("h4", "Riding the Alps", "Mountain hotel with linear views", 2),
        ]
        try db.inBatch {
            for (id, title, body, stars) in rows {
                let d = MutableDocument(id: id)
                d.setString(title, forKey: "title")
                d.setString(body, forKey: "body")
                d.setInt(stars, forKey: "stars")
                d.setString("hotel", forKey: "type")
                try hotels.save(d)
            }
        }
    }

    func ids(_ sql: String) throws -> [String] {
        try db.createQuery(sql).execute().compactMap { $0.string(at: 0) }
    }

    @Test func valueIndexIsUsedByThePlanner() throws {
        let sql = "SELECT meta().id FROM travel.hotels WHERE type = 'hotel' AND stars > 3 ORDER BY meta().id"
        let scan = try db.createQuery(sql).explain()
        #expect(scan.contains("SCAN s0"))
        // A scan looks up what it reads in projections of the bodies; an index's expressions need the bodies.
        #expect(scan.contains("sn_project(body, '[[\"stars\"],[\"type\"]]')"), "\(scan)")
        try hotels.createIndex(ValueIndexConfiguration(["type", "stars"]), name: "TypeStars")
        let plan = try db.createQuery(sql).explain()
        #expect(plan.contains("USING INDEX c\(hotels.tableID)_ix"), "plan: \(plan.replacingOccurrences(of: "\n", with: " / "))")
        #expect(!plan.contains("sn_project"))
        #expect(try ids(sql) == ["h2", "h3"])
        // The same index serves the builder's query.
        let built = QueryBuilder.select(SelectResult.expression(Meta.id)).from(DataSource.collection(hotels))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
        #expect(try built.explain().contains("USING INDEX"))
        // Expression indexes too.
        try hotels.createIndex(IndexBuilder.valueIndex(items: .expression(Function.lower(Expression.property("title")))), name: "LowerTitle")
        let lower = try db.createQuery("SELECT meta().id FROM travel.hotels WHERE LOWER(title) = 'riding the alps'")
        let lowerPlan = try lower.explain()
        #expect(lowerPlan.contains("USING INDEX"), "\(lowerPlan.replacingOccurrences(of: "\n", with: " / "))")
        #expect(try lower.execute().compactMap { $0.string(at: 0) } == ["h4"])
        #expect(try hotels.indexes == ["LowerTitle", "TypeStars"])
        try hotels.deleteIndex(name: "TypeStars")
        #expect(try hotels.indexes == ["LowerTitle"])
        #expect(try db.createQuery(sql).explain().contains("SCAN s0"))
    }

    @Test func indexNamesAndDefinitions() throws {
        try hotels.createIndex(ValueIndexConfiguration(["type"]), name: "T")
        try hotels.createIndex(ValueIndexConfiguration(["type"]), name: "T")  // same definition: no-op
        #expect(throws: StoreError.self) { try hotels.createIndex(ValueIndexConfiguration(["stars"]), name: "T") }
        #expect(throws: StoreError.self) { try hotels.createIndex(ValueIndexConfiguration(["COUNT(x)"]), name: "Bad") }
        #expect(throws: StoreError.self) { try hotels.createIndex(ValueIndexConfiguration(["type ="]), name: "Bad") }
        #expect(throws: StoreError.self) { try hotels.deleteIndex(name: "nope") }
        #expect(try hotels.indexes == ["T"])
        // Indexes survive reopening.
        try db.close()
        let again = try dir.open()
        #expect(try again.collection(name: "hotels", scope: "travel")?.indexes == ["T"])
        try again.close()
    }

    @Test func fullTextSearchPatterns() throws {
        try hotels.createIndex(FullTextIndexConfiguration(["title", "body"], ignoreAccents: true), name: "ft")
        func search(_ pattern: String) throws -> [String] {
            let q = try db.createQuery("SELECT meta().id FROM travel.hotels WHERE MATCH(ft, $p) ORDER BY meta().id")
            q.parameters = Parameters().setString(pattern, forName: "p")
            return try q.execute().compactMap { $0.string(at: 0) }
        }
        #expect(try search("linux") == ["h1", "h3"])
        #expect(try search("lin*") == ["h1", "h3", "h4"])  // linux, linear
        #expect(try search("\"library database\"") == [])
        #expect(try search("\"database library\"") == ["h3"])
        #expect(try search("\"embedded SQL\"") == ["h3"])
        #expect(try search("database NEAR/2 library") == ["h3"])
        #expect(try search("database NEAR/0 mobile") == [])
        #expect(try search("couchbase AND database") == ["h2"])
        #expect(try search("linux OR replication") == ["h1", "h2", "h3"])
        #expect(try search("database NOT mobile") == ["h3"])
        #expect(try search("(linux OR alps) NOT sql") == ["h1", "h4"])
        #expect(try search("title:linux") == ["h1"])
        #expect(try search("cafe") == ["h1"])  // ignoreAccents
        #expect(try search("ride") == ["h1", "h4"])  // porter: rides, riding
        #expect(try search("don't") == [])  // punctuation is no syntax error
    }

    @Test func fullTextIndexOfExistingDocumentsReadsTheRightPath() throws {
        let d = MutableDocument(id: "r1")
        try d.setValue(["body": "nested words", "x": 1], forKey: "renew")
        d.setString("top words", forKey: "body")
        try hotels.save(d)
        try hotels.createIndex(FullTextIndexConfiguration(["renew.body"]), name: "renewed")
        let q = try db.createQuery("SELECT meta().id FROM travel.hotels WHERE MATCH(renewed, 'nested')")
        #expect(try q.execute().compactMap { $0.string(at: 0) } == ["r1"])
        #expect(try db.createQuery("SELECT meta().id FROM travel.hotels WHERE MATCH(renewed, 'top')").execute().count == 0)
    }

    @Test func queriesFollowADeletedAndRecreatedIndex() throws {
        try hotels.createIndex(FullTextIndexConfiguration(["title"]), name: "t")
        let q = try db.createQuery("SELECT meta().id FROM travel.hotels WHERE MATCH(t, 'linux')")
        #expect(try q.execute().count == 1)
        try hotels.deleteIndex(name: "t")
        #expect(throws: StoreError.self) { try q.execute() }
        try hotels.createIndex(FullTextIndexConfiguration(["title", "body"]), name: "t")
        #expect(try q.execute().count == 2)
    }

    @Test func fullTextIndexFollowsWritesAndRanks() throws {
        try hotels.createIndex(IndexBuilder.fullTextIndex(items: .property("title")).ignoreAccents(false), name: "titles")
        let query = QueryBuilder.select(SelectResult.expression(Meta.id)).from(DataSource.collection(hotels))
            .where(FullTextFunction.match(indexName: "titles", query: "linux"))
            .orderBy(Ordering.expression(FullTextFunction.rank(indexName: "titles")).descending())
        #expect(try query.execute().compactMap { $0.string(at: 0) } == ["h1"])
        let d = MutableDocument(id: "h5")
        d.setString("Linux linux linux", forKey: "title")
        try hotels.save(d)
        #expect(try query.execute().compactMap { $0.string(at: 0) } == ["h5", "h1"])
        try hotels.delete(id: "h1")
        try hotels.purge(id: "h5")
        #expect(try query.execute().count == 0)
        guard let h3 = try hotels.document(id: "h3")?.toMutable() else { Issue.record("h3 missing"); return }
        h3.setString("Now about Linux", forKey: "title")
        try hotels.save(h3)
        #expect(try query.execute().compactMap { $0.string(at: 0) } == ["h3"])
        #expect(throws: StoreError.self) { try db.createQuery("SELECT meta().id FROM travel.hotels WHERE MATCH(nope, 'x')").execute() }
        #expect(throws: StoreError.self) { try db.createQuery("SELECT meta().id FROM travel.hotels WHERE stars > 1 OR MATCH(titles, 'x')").execute() }
        #expect(throws: StoreError.self) { try db.createQuery("SELECT RANK(titles) FROM travel.hotels").execute() }
    }
}
