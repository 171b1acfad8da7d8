import Foundation
import Testing
@testable import SyncNodeStore

/// One test per clause and operator, on a small fixed data set.
@Suite final class QueryClauseTests {
    let dir: TempDirectory
    let db: Database

    init() throws {
        dir = try TempDirectory()
        db = try dir.open()
        let docs: [(String, DocumentValue)] = [
            ("a", ["name": "Alice", "age": 30, "city": "Paris", "tags": ["x", "y"], "geo": ["alt": 120], "active": true]),
            ("b", ["name": "bob", "age": 25, "city": "Lyon", "tags": ["y"], "geo": ["alt": 450], "active": false]),
            ("c", ["name": "Carol", "age": .null, "city": "Paris", "tags": [], "nick": "caz"]),
            ("d", ["name": "Dave", "age": "forty", "city": "Nice", "tags": ["x", ["z": 1]]]),
            ("e", ["name": "Émile", "age": 41.5, "city": "Lyon", "geo": ["alt": 300]]),
        ]
        let c = try db.defaultCollection()
        try db.inBatch {
            for (id, body) in docs {
                let doc = MutableDocument(id: id)
                guard case .dictionary(let values) = body else { return }
                for (k, v) in values { try doc.setValue(v.anyValue, forKey: k) }
                try c.save(doc)
            }
        }
        let gone = MutableDocument(id: "z")
        gone.setString("Zed", forKey: "name")
        try c.save(gone)
        try c.delete(id: "z")
    }

    deinit { try? db.close() }

    func rows(_ sql: String, _ parameters: Parameters? = nil) throws -> [String] {
        let query = try db.createQuery(sql)
        query.parameters = parameters
        return try query.execute().map { $0.toJSON() }
    }

    func ids(_ whereClause: String) throws -> [String] {
        try db.createQuery("SELECT meta().id FROM _ WHERE \(whereClause) ORDER BY meta().id").execute().compactMap { $0.string(at: 0) }
    }

    @Test func projectionsNamesAndStar() throws {
        #expect(try rows("SELECT name, geo.alt, age + 1 AS next, meta().id FROM _ WHERE meta().id = 'a'")
            == [#"{"alt":120,"id":"a","name":"Alice","next":31}"#])
        let star = try db.createQuery("SELECT * FROM _ AS p WHERE meta().id = 'b'").execute().allResults()
        #expect(star.first?.dictionary(forKey: "p")?.string(forKey: "city") == "Lyon")
        let named = try db.createQuery("SELECT p.* FROM _default AS p WHERE meta(p).id = 'b'").execute().allResults()
        #expect(named.first?.keys == ["p"])
        let dbName = try db.createQuery("SELECT * FROM db WHERE meta().id = 'b'").execute().allResults()
        #expect(dbName.first?.keys == ["db"])
        #expect(try rows("SELECT LENGTH(name) FROM _ WHERE meta().id = 'a'") == [#"{"$1":5}"#])
        // A MISSING column is left out; null stays.
        #expect(try rows("SELECT nick, age FROM _ WHERE meta().id = 'c'") == [#"{"age":null,"nick":"caz"}"#])
        #expect(try rows("SELECT nick, age FROM _ WHERE meta().id = 'a'") == [#"{"age":30}"#])
    }

    @Test func deletedDocumentsNeverAppear() throws {
        #expect(try ids("name = 'Zed'").isEmpty)
        #expect(try db.createQuery("SELECT COUNT(*) AS n FROM _").execute().allResults().first?.int(forKey: "n") == 5)
    }

    @Test func comparisonsAreTyped() throws {
        #expect(try ids("age > 26") == ["a", "e"])  // "forty" is a string, null is null
        #expect(try ids("age < 100") == ["a", "b", "e"])
        #expect(try ids("age = 30") == ["a"])
        #expect(try ids("age != 30") == ["b", "d", "e"])  // null != 30 is null; MISSING too
        #expect(try ids("active = TRUE") == ["a"])
        #expect(try ids("active = 1") == [])
        #expect(try ids("age BETWEEN 25 AND 30") == ["a", "b"])
        #expect(try ids("age > 'a'") == ["d"])
        #expect(try ids("geo.alt >= 300") == ["b", "e"])
    }

    @Test func logicAndArithmetic() throws {
        #expect(try ids("city = 'Paris' AND NOT active") == [])
        #expect(try ids("city = 'Paris' OR age > 40") == ["a", "c", "e"])
        #expect(try ids("age * 2 - 10 = 50") == ["a"])
        #expect(try ids("age % 7 = 2") == ["a"])
        #expect(try rows("SELECT 7 / 2 AS q, 10 / 0 AS z FROM _ WHERE meta().id = 'a'") == [#"{"q":3.5,"z":null}"#])
        #expect(try ids("name || '!' = 'bob!'") == ["b"])
    }

    @Test func inLikeRegexAndChecks() throws {
        #expect(try ids("city IN ('Lyon', 'Nice')") == ["b", "d", "e"])
        #expect(try ids("city NOT IN ['Lyon', 'Nice']") == ["a", "c"])
        #expect(try ids("name LIKE 'a%'") == ["a"])  // ASCII case-insensitive
        #expect(try ids("name LIKE '_ob'") == ["b"])
        #expect(try ids("REGEXP_LIKE(name, '^[A-D][a-z]+$')") == ["a", "c", "d"])
        #expect(try ids("age IS NULL") == ["c"])
        #expect(try ids("age IS MISSING") == [])
        #expect(try ids("nick IS MISSING") == ["a", "b", "d", "e"])
        #expect(try ids("age IS VALUED") == ["a", "b", "d", "e"])
        #expect(try ids("geo IS NOT VALUED") == ["c", "d"])
    }

    @Test func functions() throws {
        #expect(try rows("SELECT LOWER(name) AS l, UPPER(name) AS u FROM _ WHERE meta().id = 'e'") == [#"{"l":"émile","u":"ÉMILE"}"#])
        #expect(try ids("ARRAY_CONTAINS(tags, 'x')") == ["a", "d"])
        #expect(try ids("ARRAY_LENGTH(tags) = 0") == ["c"])
        #expect(try ids("CONTAINS(name, 'ar')") == ["c"])
        #expect(try rows("SELECT TRIM('  hi ') AS t, ROUND(2.5) AS r, ABS(-3) AS a, FLOOR(2.7) AS f, SQRT(-1) AS s FROM _ WHERE meta().id = 'a'")
            == [#"{"a":3,"f":2,"r":3,"s":null,"t":"hi"}"#])
        #expect(throws: StoreError.self) { try db.createQuery("SELECT NOSUCH(name) FROM _") }
    }

    @Test func caseAndQuantifiers() throws {
        #expect(try rows("SELECT CASE WHEN age > 28 THEN 'old' WHEN age > 0 THEN 'young' ELSE 'n/a' END AS k FROM _ ORDER BY meta().id")
            == [#"{"k":"old"}"#, #"{"k":"young"}"#, #"{"k":"n/a"}"#, #"{"k":"n/a"}"#, #"{"k":"old"}"#])
        #expect(try ids("ANY t IN tags SATISFIES t = 'y' END") == ["a", "b"])
        #expect(try ids("ANY t IN tags SATISFIES t.z = 1 END") == ["d"])
        #expect(try ids("EVERY t IN tags SATISFIES t = 'y' END") == ["b", "c"])
    }

    @Test func groupHavingOrderLimit() throws {
        #expect(try rows("SELECT city, COUNT(*) AS n FROM _ GROUP BY city HAVING COUNT(*) > 1 ORDER BY city")
            == [#"{"city":"Lyon","n":2}"#, #"{"city":"Paris","n":2}"#])
        #expect(try rows("SELECT MIN(age) AS lo, MAX(age) AS hi, SUM(age) AS s, AVG(geo.alt) AS a FROM _")
            == [#"{"a":290,"hi":"forty","lo":25,"s":96.5}"#])
        // Mixed types sort MISSING, null, booleans, numbers, strings.
        #expect(try db.createQuery("SELECT meta().id FROM _ ORDER BY age, meta().id").execute().compactMap { $0.string(at: 0) }
            == ["c", "b", "a", "e", "d"])
        #expect(try db.createQuery("SELECT meta().id FROM _ ORDER BY active DESC, meta().id LIMIT 2 OFFSET 1").execute().compactMap { $0.string(at: 0) }
            == ["b", "c"])
        #expect(try rows("SELECT DISTINCT city FROM _ ORDER BY city") == [#"{"city":"Lyon"}"#, #"{"city":"Nice"}"#, #"{"city":"Paris"}"#])
    }

    @Test func parameters() throws {
        let query = try db.createQuery("SELECT meta().id FROM _ WHERE city = $city AND age >= $min ORDER BY meta().id")
        query.parameters = Parameters().setString("Lyon", forName: "city").setInt(0, forName: "min")
        #expect(try query.execute().compactMap { $0.string(at: 0) } == ["b", "e"])
        query.parameters = Parameters().setString("Paris", forName: "city").setInt(0, forName: "min")
        #expect(try query.execute().compactMap { $0.string(at: 0) } == ["a"])
        query.parameters = nil
        #expect(try query.execute().count == 0)
    }

    @Test func aFloatConstantMatchesAStoredFloat() throws {
        let doc = MutableDocument(id: "f")
        doc.setFloat(0.1, forKey: "ratio")
        try db.defaultCollection().save(doc)
        let query = QueryBuilder.select(SelectResult.expression(Meta.id)).from(DataSource.database(db))
            .where(Expression.property("ratio").equalTo(Expression.float(0.1)))
        #expect(try query.execute().compactMap { $0.string(at: 0) } == ["f"])
    }

    @Test func aStringParameterIsBoundWhole() throws {
        // Bound by byte count: a NUL must not end it ("Lyon\0x" is not "Lyon").
        let query = try db.createQuery("SELECT meta().id FROM _ WHERE city = $city")
        query.parameters = Parameters().setString("Lyon\u{0}x", forName: "city")
        #expect(try query.execute().count == 0)
        query.parameters = Parameters().setString("Lyon", forName: "city")
        #expect(try query.execute().count == 2)
    }

    @Test func joins() throws {
        let cities = try db.createCollection(name: "cities")
        for (name, country) in [("Paris", "FR"), ("Lyon", "FR"), ("Berlin", "DE")] {
            let d = MutableDocument(id: name)
            d.setString(name, forKey: "name")
            d.setString(country, forKey: "country")
            try cities.save(d)
        }
        #expect(try rows("SELECT p.name, c.country FROM _ AS p JOIN cities AS c ON p.city = c.name WHERE c.country = 'FR' ORDER BY p.name")
            == [#"{"country":"FR","name":"Alice"}"#, #"{"country":"FR","name":"Carol"}"#, #"{"country":"FR","name":"bob"}"#, #"{"country":"FR","name":"Émile"}"#])
        #expect(try rows("SELECT p.name, c.country FROM _ AS p LEFT OUTER JOIN cities AS c ON p.city = c.name WHERE meta(p).id = 'd'")
            == [#"{"name":"Dave"}"#])
        #expect(try db.createQuery("SELECT meta(p).id FROM _ AS p CROSS JOIN cities AS c").execute().count == 15)
    }

    @Test func syntaxErrorsNamePositionAndExpectation() {
        func message(_ sql: String) -> String {
            do { _ = try db.createQuery(sql); return "" } catch { return "\(error)" }
        }
        #expect(message("SELECT name FROM").contains("position 16: expected a collection name, found end of query"))
        #expect(message("SELECT name FROM _ WHERE name = 'x").contains("position 32: unterminated string"))
        #expect(message("SELECT name, FROM _").contains("position 13: expected an expression"))
        #expect(message("SELECT a FROM _ WHERE a IS 3").contains("expected NULL, MISSING or VALUED after IS"))
        #expect(message("SELECT FOO(a) FROM _").contains("unknown function 'FOO'"))
        #expect(message("SELECT LOWER(a, b) FROM _").contains("LOWER takes 1 argument(s), got 2"))
    }
}
