import Foundation
import Testing
@testable import SyncNodeStore

/// A generated travel-sample-like database (airlines, routes, airports,
/// hotels, landmarks) running one query of each kind the API offers (joins, grouping,
/// full-text, parameters...), with the
/// expected answers computed from the fixture data in plain Swift.
@Suite final class TravelSampleTests {
    let dir: TempDirectory
    let db: Database
    let bodies: [String: [String: DocumentValue]]

    init() throws {
        dir = try TempDirectory()
        db = try Database(name: "travel-sample", config: DatabaseConfiguration(directory: dir.url))
        var rng = SeededRandom(seed: 99)
        func pick<T>(_ items: [T]) -> T { items[Int(rng.next() % UInt64(items.count))] }
        var bodies: [String: [String: DocumentValue]] = [:]
        let countries = ["France", "United Kingdom", "United States"]
        let zones = ["France": ["Europe/Paris"], "United Kingdom": ["Europe/London"], "United States": ["America/Anchorage", "America/Chicago"]]
        for i in 0..<20 {
            bodies["airline_\(i)"] = ["type": "airline", "name": .string("Air \(pick(["Alpha", "Baltic", "Coast", "Delta"])) \(i)"),
                                     "callsign": .string("CS\(i)"), "country": .string(pick(countries)), "id": .int(Int64(i))]
        }
        let airports = ["RIX", "CDG", "LHR", "JFK", "ANC"]
        for i in 0..<60 {
            bodies["route_\(i)"] = ["type": "route", "airlineid": .string("airline_\(rng.next() % 25)"),  // some airlines do not exist
                                   "sourceairport": .string(pick(airports)), "destinationairport": .string(pick(airports)), "stops": .int(Int64(rng.next() % 2))]
        }
        for i in 0..<80 {
            let country = pick(countries)
            bodies["airport_\(i)"] = ["type": "airport", "country": .string(country), "tz": .string(pick(zones[country] ?? [])),
                                     "geo": ["alt": .int(Int64(rng.next() % 800))], "airportname": .string("Airport \(i)")]
        }
        let people = ["Armani Langworth", "Elfrieda Gutkowski", "Maureen Ruecker", "Armani Smith"]
        for i in 0..<30 {
            bodies["hotel_\(i)"] = ["type": "hotel", "name": .string("Hotel \(i)"), "title": .string(pick(["Aberdyfi", "Ardèche", "annan", "Avignon", "Zermatt"])),
                                   "public_likes": .array((0..<Int(rng.next() % 3)).map { _ in .string(pick(people)) }),
                                   "first": .string(pick(["Armani", "Bea", "Cy"])), "last": .string(pick(["Armani", "Doe"])), "username": .string("u\(i)")]
        }
        for (i, name) in ["Royal Engineers Museum", "royal engineers museum", "Engineers Hall", "english egg", "Engine shed", "Engineer house", "Museum of Art"].enumerated() {
            bodies["landmark_\(i)"] = ["type": "landmark", "name": .string(name), "country": .string(pick(countries))]
        }
        let collection = try db.defaultCollection()
        try db.inBatch {
            for (id, body) in bodies {
                let doc = MutableDocument(id: id)
                for (k, v) in body { doc.setDocumentValue(v, forKey: k) }
                try collection.save(doc)
            }
        }
        self.bodies = bodies
    }

    deinit { try? db.close() }

    func ids(ofType type: String, _ filter: ([String: DocumentValue]) -> Bool) -> [String] {
        bodies.filter { $0.value["type"] == .string(type) && filter($0.value) }.map(\.key).sorted()
    }

    @Test func selectWhereLimitAndAll() throws {
        let query = QueryBuilder.select(SelectResult.expression(Meta.id), SelectResult.property("type"), SelectResult.property("name"))
            .from(DataSource.database(db))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
            .limit(Expression.int(10))
        let results = try query.execute().allResults()
        #expect(results.count == 10)
        #expect(results.allSatisfy { $0.string(forKey: "type") == "hotel" && $0.string(forKey: "id")?.hasPrefix("hotel_") == true })
        let all = try QueryBuilder.select(SelectResult.all()).from(DataSource.database(db))
            .where(Expression.property("type").equalTo(Expression.string("airline"))).execute().allResults()
        #expect(all.count == 20)
        #expect(all.first?.dictionary(forKey: "travel-sample")?.string(forKey: "callsign")?.hasPrefix("CS") == true)
    }

    @Test func collectionOperators() throws {
        let likes = QueryBuilder.select(SelectResult.expression(Meta.id), SelectResult.property("public_likes"))
            .from(DataSource.database(db))
            .where(Expression.property("type").equalTo(Expression.string("hotel"))
                .and(ArrayFunction.contains(Expression.property("public_likes"), value: Expression.string("Armani Langworth"))))
            .orderBy(Ordering.expression(Meta.id))
        let expected = ids(ofType: "hotel") { $0["public_likes"].map { if case .array(let a) = $0 { return a.contains("Armani Langworth") } else { return false } } ?? false }
        #expect(try likes.execute().compactMap { $0.string(forKey: "id") }.sorted() == expected)
        let armani = QueryBuilder.select(SelectResult.expression(Meta.id)).from(DataSource.database(db))
            .where(Expression.string("Armani").in([Expression.property("first"), Expression.property("last"), Expression.property("username")]))
        let expectedArmani = ids(ofType: "hotel") { $0["first"] == "Armani" || $0["last"] == "Armani" }
        #expect(try armani.execute().compactMap { $0.string(at: 0) }.sorted() == expectedArmani)
    }

    @Test func likeAndRegex() throws {
        func names(_ condition: SyncNodeStore.Expression) throws -> [String] {
            try QueryBuilder.select(SelectResult.property("name")).from(DataSource.database(db))
                .where(Expression.property("type").equalTo(Expression.string("landmark")).and(condition))
                .orderBy(Ordering.property("name")).execute().compactMap { $0.string(forKey: "name") }
        }
        #expect(try names(Expression.property("name").like(Expression.string("Royal engineers museum"))) == ["Royal Engineers Museum", "royal engineers museum"])
        #expect(try names(Expression.property("name").like(Expression.string("eng%e%"))) == ["Engine shed", "Engineer house", "Engineers Hall", "english egg"])
        #expect(try names(Expression.property("name").like(Expression.string("eng____r%"))) == ["Engineer house", "Engineers Hall"])
        #expect(try names(Expression.property("name").regex(Expression.string("\\bEng.*e\\b"))) == ["Engine shed", "Engineer house"])
    }

    @Test func joinAirlinesWithRoutesFromRIX() throws {
        let query = QueryBuilder.select(
                SelectResult.expression(Expression.property("name").from("airline")),
                SelectResult.expression(Expression.property("callsign").from("airline")),
                SelectResult.expression(Expression.property("destinationairport").from("route")),
                SelectResult.expression(Expression.property("stops").from("route")),
                SelectResult.expression(Expression.property("airline").from("route")))
            .from(DataSource.database(db).as("airline"))
            .join(Join.join(DataSource.database(db).as("route"))
                .on(Meta.id.from("airline").equalTo(Expression.property("airlineid").from("route"))))
            .where(Expression.property("type").from("route").equalTo(Expression.string("route"))
                .and(Expression.property("type").from("airline").equalTo(Expression.string("airline")))
                .and(Expression.property("sourceairport").from("route").equalTo(Expression.string("RIX"))))
        let rows = try query.execute().allResults()
        let expected = bodies.filter { $0.value["type"] == "route" && $0.value["sourceairport"] == "RIX" }
            .compactMap { route -> String? in
                guard case .string(let airline)? = route.value["airlineid"], let a = bodies[airline] else { return nil }
                return "\(a["name"]?.toJSON() ?? "")|\(route.value["destinationairport"]?.toJSON() ?? "")"
            }.sorted()
        #expect(!expected.isEmpty)
        #expect(rows.map { "\($0.documentValue(forKey: "name")?.toJSON() ?? "")|\($0.documentValue(forKey: "destinationairport")?.toJSON() ?? "")" }.sorted() == expected)
        #expect(rows.allSatisfy { !$0.contains(key: "airline") })  // routes have no "airline" property: MISSING
    }

    @Test func groupAirportsByCountryAndTimezone() throws {
        let query = QueryBuilder.select(
                SelectResult.expression(Function.count(Expression.all())),
                SelectResult.property("country"),
                SelectResult.property("tz"))
            .from(DataSource.database(db))
            .where(Expression.property("type").equalTo(Expression.string("airport"))
                .and(Expression.property("geo.alt").greaterThanOrEqualTo(Expression.int(300))))
            .groupBy(Expression.property("country"), Expression.property("tz"))
        var expected: [String: Int] = [:]
        for body in bodies.values where body["type"] == "airport" {
            if case .dictionary(let geo)? = body["geo"], case .int(let alt)? = geo["alt"], alt >= 300 {
                expected["\(body["country"]?.toJSON() ?? "")|\(body["tz"]?.toJSON() ?? "")", default: 0] += 1
            }
        }
        var actual: [String: Int] = [:]
        for result in try query.execute() {
            actual["\(result.documentValue(forKey: "country")?.toJSON() ?? "")|\(result.documentValue(forKey: "tz")?.toJSON() ?? "")"] = result.int(forKey: "$1")
        }
        #expect(actual == expected)
        // The same in SQL++.
        let sql = try db.createQuery("SELECT COUNT(*), country, tz FROM _ WHERE type = 'airport' AND geo.alt >= 300 GROUP BY country, tz").execute()
        #expect(sql.count == expected.count)
    }

    @Test func orderByTitle() throws {
        let titles = try QueryBuilder.select(SelectResult.expression(Meta.id), SelectResult.property("title"))
            .from(DataSource.database(db))
            .where(Expression.property("type").equalTo(Expression.string("hotel")))
            .orderBy(Ordering.property("title").ascending())
            .limit(Expression.int(10))
            .execute().compactMap { $0.string(forKey: "title") }
        let expected = bodies.values.filter { $0["type"] == "hotel" }.compactMap { $0["title"]?.stringValue }
            .sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }.prefix(10)
        #expect(titles == Array(expected))
    }

    @Test func fullTextTasks() throws {
        let tasks = try db.createCollection(name: "tasks")
        for task in ["buy groceries", "play chess", "book travels", "buy museum tickets"] {
            let doc = MutableDocument()
            doc.setString("task", forKey: "type")
            doc.setString(task, forKey: "name")
            try tasks.save(doc)
        }
        try tasks.createIndex(IndexBuilder.fullTextIndex(items: FullTextIndexItem.property("name")).ignoreAccents(false), name: "nameFTSIndex")
        let query = QueryBuilder.select(SelectResult.expression(Meta.id), SelectResult.property("name"))
            .from(DataSource.collection(tasks))
            .where(FullTextExpression.index("nameFTSIndex").match("'buy'"))
        #expect(try query.execute().compactMap { $0.string(forKey: "name") }.sorted() == ["buy groceries", "buy museum tickets"])
    }
}
