import Foundation
import Testing
@testable import SyncNodeStore

/// Random documents and random queries from a grammar: the SQLite-backed
/// result must equal a small reference evaluator's over the same documents,
/// and the SQL++ text must parse back to the generated tree. Seeded and
/// reproducible: set SYNCNODE_QUERY_SEED to replay another seed.
@Suite struct DifferentialQueryTests {
    /// `padded`: each document also holds a string big enough that a scan reads its lookups
    /// from projections of the bodies (`JSONProjection`) rather than from the bodies.
    ///
    /// Each case yields its thread: the run takes tens of seconds of CPU, and held without a break
    /// it kept one of the two cooperative threads of a 2-core machine from every other test (a
    /// streamed answer's reader elsewhere went unread for a minute, and its node closed it).
    @Test(arguments: [false, true]) func sqliteAgreesWithTheReferenceEvaluator(padded: Bool) async throws {
        let seed = ProcessInfo.processInfo.environment["SYNCNODE_QUERY_SEED"].flatMap(UInt64.init) ?? 20261121
        let cases = padded ? 600 : 3000
        let dir = try TempDirectory()
        let db = try dir.open()
        let collection = try db.createCollection(name: QueryGenerator.collectionName)
        var generator = QueryGenerator(seed: seed)
        var documents: [ReferenceDocument] = []
        for i in 0..<30 {
            var body = generator.documentBody()
            if padded { body["padding"] = .string(String(repeating: "p", count: JSONProjection.minimumSize)) }
            let doc = MutableDocument(id: QueryGenerator.documentID(i))
            for (key, value) in body { doc.setDocumentValue(value, forKey: key) }
            try collection.save(doc)
            guard let saved = try collection.document(id: doc.id) else { Issue.record("document \(doc.id) not saved"); return }
            documents.append(ReferenceDocument(id: saved.id, sequence: saved.sequence, body: body))
        }

        var failures = 0
        var checked = 0
        for n in 0..<cases where failures < 5 {
            await Task.yield()
            let generated = generator.statement()
            let parameters = generator.parameters()
            let text = QueryGenerator.render(generated)
            let context = "case \(n) of seed \(seed): \(text) with \(DocumentValue.dictionary(parameters).toJSON())"
            let parsed: SelectStatement
            do {
                parsed = try SQLPPParser.parseStatement(text)
            } catch {
                Issue.record("\(context): does not parse: \(error)")
                failures += 1
                continue
            }
            guard parsed == generated else {
                Issue.record("\(context): parses to another tree than generated:\n\(generated)\n\(parsed)")
                failures += 1
                continue
            }
            let expected = try ReferenceEvaluator.run(generated, documents: documents, parameters: parameters)
            let query = Query(database: db, statement: parsed)
            query.parameters = Parameters(parameters)
            let actual: [ReferenceRow]
            do {
                actual = try query.execute().map { result in zip(result.columnNames, result.values).map { ($0, $1) } }
            } catch {
                Issue.record("\(context): SQLite failed: \(error)")
                failures += 1
                continue
            }
            let ordered = generated.limit != nil || generated.offset != nil
            if !Self.same(expected, actual, ordered: ordered) {
                Issue.record("\(context)\nexpected \(Self.describe(expected))\nactual   \(Self.describe(actual))\nSQL: \(try query.explain())")
                failures += 1
            }
            // The rows as an HTTP answer writes them (JSON text from SQLite, not parsed) say the same.
            var streamed: [UInt8] = []
            try query.writeRowsJSON { streamed.append(contentsOf: $0) }
            let written = try DocumentValue(json: "[" + String(decoding: streamed, as: UTF8.self) + "]")
            let built = DocumentValue.array(try query.execute().map { try DocumentValue(json: $0.toJSON()) })
            if written != built {
                Issue.record("\(context)\nwritten as read: \(String(decoding: streamed, as: UTF8.self))\nbuilt: \(built.toJSON())")
                failures += 1
            }
            checked += 1
        }
        #expect(failures == 0)
        #expect(checked == cases || failures > 0)
        try db.close()
    }

    private static func same(_ expected: [ReferenceRow], _ actual: [ReferenceRow], ordered: Bool) -> Bool {
        guard expected.count == actual.count else { return false }
        let (e, a) = ordered ? (expected, actual) : (sorted(expected), sorted(actual))
        for (x, y) in zip(e, a) {
            guard x.count == y.count else { return false }
            for (cx, cy) in zip(x, y) where cx.0 != cy.0 || !ReferenceEvaluator.sameValue(cx.1, cy.1) { return false }
        }
        return true
    }

    private static func sorted(_ rows: [ReferenceRow]) -> [ReferenceRow] {
        // By bytes: Swift's String order treats "Café" composed and decomposed as equal.
        rows.map { (row: $0, key: Array(ReferenceEvaluator.canonicalText(of: $0).utf8)) }
            .sorted { $0.key.lexicographicallyPrecedes($1.key) }
            .map(\.row)
    }

    private static func describe(_ rows: [ReferenceRow]) -> String {
        rows.prefix(8).map { row in "{" + row.map { "\($0.0): \($0.1.map { $0.toJSON() } ?? "MISSING")" }.joined(separator: ", ") + "}" }
            .joined(separator: " ") + (rows.count > 8 ? " ... (\(rows.count) rows)" : " (\(rows.count) rows)")
    }
}
