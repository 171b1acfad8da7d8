import Foundation
import Testing
@testable import SyncNodeStore

/// Hostile input: a clear error or a correct result, never a crash or a wrong table.
@Suite final class HostileQueryTests {
    let dir: TempDirectory
    let db: Database

    init() throws {
        dir = try TempDirectory()
        db = try dir.open()
        let c = try db.defaultCollection()
        for i in 0..<10 {
            let d = MutableDocument(id: "d\(i)")
            d.setInt(i, forKey: "n")
            d.setString("v\(i)", forKey: "s")
            try c.save(d)
        }
    }

    deinit { try? db.close() }

    func count() throws -> Int { try db.defaultCollection().count }

    /// SQLite ends a statement's text and a JSON path at a NUL byte (found by the hostile campaign:
    /// a Mango index on such a field answered 500).
    @Test func nulCharactersAreQuotedOrRefused() throws {
        let c = try db.defaultCollection()
        let literal = try db.createQuery("SELECT META().id FROM _ WHERE s || \"\u{0}x\" = \"v3\u{0}x\"").execute().allResults()
        #expect(literal.map { $0.string(at: 0) } == ["d3"])
        #expect(throws: StoreError.self) { try db.createQuery("SELECT `a\u{0}b` FROM _").execute() }
        #expect(throws: StoreError.self) { try c.createIndex(ValueIndexConfiguration(["`a\u{0}b`"]), name: "nul") }
        #expect(try count() == 10)
    }

    @Test func deepNestingIsRefused() throws {
        let deep = "SELECT " + String(repeating: "(", count: 5000) + "1" + String(repeating: ")", count: 5000) + " FROM _"
        #expect(throws: StoreError.self) { try db.createQuery(deep) }
        let nots = "SELECT n FROM _ WHERE " + String(repeating: "NOT ", count: 5000) + "n"
        #expect(throws: StoreError.self) { try db.createQuery(nots) }
        let minus = "SELECT " + String(repeating: "-", count: 5000) + "n FROM _"
        #expect(throws: StoreError.self) { try db.createQuery(minus) }
        let plus = "SELECT " + String(repeating: "+", count: 100_000) + "n FROM _"
        #expect(throws: StoreError.self) { try db.createQuery(plus) }
        let sums = "SELECT n" + String(repeating: " + 1", count: 5000) + " FROM _"
        #expect(throws: StoreError.self) { try db.createQuery(sums) }
        // Each nested CASE copies its operands: 12 levels (100 KB of text) would compile to gigabytes.
        var nested = "n"
        for _ in 0..<12 { nested = "CASE WHEN (\(nested)) > 1 THEN (\(nested)) END" }
        #expect(throws: StoreError.self) { try db.createQuery("SELECT \(nested) FROM _").execute() }
        // Nested IN lists and CASE subjects grow as fast from a few hundred bytes (it took 3.4 GB
        // and 15 s to refuse the first before sizes were checked before each copy, type tags included).
        var inLists = "n", subjects = "n", ranges = "n"
        for _ in 0..<14 {
            inLists = "((\(inLists)) IN [1, n, 3])"
            subjects = "CASE \(subjects) WHEN 1 THEN n WHEN n THEN 2 ELSE n END"
            ranges = "((\(ranges)) BETWEEN n AND 5)"
        }
        // Each term under the limit, a hundred of them over it together.
        var term = "n"
        for _ in 0..<11 { term = "((\(term)) BETWEEN n AND 5)" }
        let manyTerms = Array(repeating: "(\(term))", count: 100).joined(separator: " OR ")
        for query in [inLists, subjects, ranges, manyTerms] {
            #expect(throws: StoreError.self) { try db.createQuery("SELECT \(query) FROM _").execute() }
        }
        // Within the limit it runs.
        let fine = "SELECT " + String(repeating: "(", count: 40) + "n + 1" + String(repeating: ")", count: 40) + " AS x FROM _ WHERE n = 2"
        #expect(try db.createQuery(fine).execute().allResults().first?.int(forKey: "x") == 3)
    }

    @Test func longAndOrChainsWork() throws {
        let ors = (0..<20_000).map { "n = \($0 % 3)" }.joined(separator: " OR ")
        #expect(try db.createQuery("SELECT n FROM _ WHERE \(ors)").execute().count == 3)
        let ands = (0..<20_000).map { _ in "n >= 0" }.joined(separator: " AND ")
        #expect(try db.createQuery("SELECT n FROM _ WHERE \(ands)").execute().count == 10)
    }

    @Test func longBuilderChainsWork() throws {
        // Built one `or` at a time: a 20,000-deep tree, which the compiler must not hand to SQLite as such.
        var ors = Expression.property("n").equalTo(Expression.int(0))
        for i in 1..<20_000 { ors = ors.or(Expression.property("n").equalTo(Expression.int(i % 3))) }
        let query = QueryBuilder.select(SelectResult.property("n")).from(DataSource.database(db)).where(ors)
        #expect(try query.execute().count == 3)
        var ands = Expression.property("n").greaterThanOrEqualTo(Expression.int(0))
        for _ in 1..<20_000 { ands = Expression.property("n").lessThan(Expression.int(100)).and(ands) }
        #expect(try QueryBuilder.select(SelectResult.property("n")).from(DataSource.database(db)).where(ands).execute().count == 10)
    }

    /// A pattern that backtracks catastrophically on a value gives up with an error
    /// after a bounded time (2^40 steps would otherwise hold the query for hours).
    @Test func aRunawayRegularExpressionStops() throws {
        let c = try db.defaultCollection()
        let doc = MutableDocument(id: "runaway")
        doc.setString(String(repeating: "a", count: 40) + "b", forKey: "s")
        try c.save(doc)
        #expect(throws: StoreError.self) { try db.createQuery("SELECT meta().id FROM _ WHERE REGEXP_LIKE(s, '(a+)+$')").execute() }
        // Ordinary patterns still match.
        #expect(try db.createQuery("SELECT meta().id FROM _ WHERE REGEXP_LIKE(s, '^v[1-3]$')").execute().count == 3)
    }

    @Test func hugeInListsWork() throws {
        let strings = (0..<20_000).map { "'v\($0)'" }.joined(separator: ", ")
        #expect(try db.createQuery("SELECT n FROM _ WHERE s IN (\(strings))").execute().count == 10)
        // Items the native IN cannot take (0, 1, TRUE) become a balanced OR tree, not a 20,000-deep chain.
        let mixed = (0..<20_000).map { $0 % 3 == 0 ? "TRUE" : "\($0 % 2)" }.joined(separator: ", ")
        #expect(try db.createQuery("SELECT n FROM _ WHERE n IN (\(mixed))").execute().count == 2)
    }

    @Test func injectionInNamesAndParametersIsInert() throws {
        let names = ["a'); DROP TABLE c1_docs; --", "x' OR '1'='1", "n`", "$.n", "n]"]
        for name in names {
            let quoted = "`" + name.replacingOccurrences(of: "`", with: "``") + "`"
            let results = try db.createQuery("SELECT \(quoted) FROM _").execute()
            #expect(results.count == 10)
            #expect(results.allSatisfy { $0.keys.isEmpty }, "\(name) is a property nobody has")
        }
        #expect(throws: StoreError.self) { try db.createQuery("SELECT `a\"b` FROM _").execute() }
        let q = try db.createQuery("SELECT n FROM _ WHERE s = $s")
        q.parameters = Parameters().setString("v1' OR '1'='1", forName: "s")
        #expect(try q.execute().count == 0)
        q.parameters = Parameters().setString("'; DROP TABLE c1_docs; --", forName: "s")
        #expect(try q.execute().count == 0)
        #expect(throws: StoreError.self) { try db.createQuery("SELECT n FROM `c1_docs; DROP TABLE c1_docs`").execute() }
        #expect(throws: StoreError.self) { try db.createQuery("SELECT n FROM _; DROP TABLE c1_docs") }
        #expect(try count() == 10)
    }

    @Test func badInputGivesErrorsNotCrashes() throws {
        for sql in ["", "SELECT", "SELECT * FROM", "SELECT n FROM _ WHERE", "SELECT n FROM _ LIMIT", "SELECT 'abc FROM _",
                    "SELECT `abc FROM _", "SELECT n FROM _ /* open", "SELECT 1e999 FROM _", "SELECT $ FROM _",
                    "SELECT n FROM _ ORDER", "SELECT CASE END FROM _", "SELECT ANY x IN n END FROM _", "SELECT meta().nope FROM _",
                    "SELECT n FROM a JOIN b", "SELECT n FROM _ AS a JOIN _ AS a ON 1", "SELECT n FROM _ WHERE n IS 5", "SELECT @ FROM _"] {
            do {
                _ = try db.createQuery(sql).execute()
                Issue.record("no error for \(sql)")
            } catch let error as StoreError {
                guard case .invalidQuery(let message) = error else { Issue.record("\(sql): \(error)"); continue }
                #expect(!message.isEmpty)
            }
        }
        // Runtime failures are errors too.
        #expect(throws: StoreError.self) { try db.createQuery("SELECT n FROM _ WHERE REGEXP_LIKE(s, '(')").execute() }
        #expect(try count() == 10)
    }
}
