import Foundation
import Testing
@testable import SyncNodeStore

/// Mango selectors compiled onto the query engine must select what a direct
/// matcher of CouchDB's Mango semantics (below, written apart from the
/// compiler) selects, over random documents and random selectors. Seeded:
/// SYNCNODE_QUERY_SEED replays another seed.
@Suite struct MangoTests {
    /// `padded`: each document also holds a string big enough that the scan reads its lookups
    /// from projections of the bodies (`JSONProjection`) rather than from the bodies.
    /// Each case yields its thread, as `DifferentialQueryTests` does, for the same reason.
    @Test(arguments: [false, true]) func engineAgreesWithTheReferenceMatcher(padded: Bool) async throws {
        let seed = ProcessInfo.processInfo.environment["SYNCNODE_QUERY_SEED"].flatMap(UInt64.init) ?? 20261125
        var random = SeededRandom(seed: seed)
        let dir = try TempDirectory()
        let db = try dir.open()
        let collection = try db.defaultCollection()
        var bodies: [String: [String: DocumentValue]] = [:]
        for i in 0..<120 {
            let id = String(format: "d%03d", i)
            var body: [String: DocumentValue] = [:]
            for field in ["a", "b", "tags", "nested"] { if let v = MangoGenerator.value(field, &random) { body[field] = v } }
            if padded { body["padding"] = .string(String(repeating: "p", count: JSONProjection.minimumSize)) }
            let doc = MutableDocument(id: id)
            for (key, value) in body { doc.setDocumentValue(value, forKey: key) }
            try collection.save(doc)
            // Read back: what the store keeps (integral doubles become integers) is what both sides see.
            bodies[id] = try #require(try collection.document(id: id)).toDictionary().mapValues { try DocumentValue(any: $0) }
        }
        var failures = 0
        for n in 0..<(padded ? 250 : 1500) where failures < 5 {
            await Task.yield()
            let selector = MangoGenerator.selector(&random, depth: 0)
            let body: [String: DocumentValue] = ["selector": selector, "limit": 1000]
            let expected = bodies.keys.filter { MangoReference.matches(selector, .dictionary(bodies[$0]!)) }.sorted()
            let actual: [String]
            do {
                actual = try MangoQuery(body).query(on: collection).execute().map { $0.string(forKey: "id") ?? "?" }
            } catch {
                Issue.record("case \(n) of seed \(seed): \(selector.toJSON()) failed: \(error)")
                failures += 1
                continue
            }
            // The changes feed's filter (`_changes?filter=_selector`) compiles the same selector
            // without the query engine around it: every tenth case checks it too.
            if n % 10 == 0 {
                let feed = try collection.changes(since: 0, matching: ChangeSelector(selector, for: collection)).entries.map(\.id)
                #expect(feed == expected, "case \(n) of seed \(seed): the changes feed's filter \(selector.toJSON())")
            }
            if actual != expected {
                failures += 1
                let missing = Set(expected).subtracting(actual).sorted().prefix(3), extra = Set(actual).subtracting(expected).sorted().prefix(3)
                Issue.record("case \(n) of seed \(seed): \(selector.toJSON())\nmissing \(missing.map { "\($0) \(DocumentValue.dictionary(bodies[$0]!).toJSON())" })\nextra \(extra.map { "\($0) \(DocumentValue.dictionary(bodies[$0]!).toJSON())" })")
            }
        }
    }

    /// `_id`, `_rev` and `_deleted` are what they are in a CouchDB document, not body fields.
    @Test func metaFieldsNameTheDocument() throws {
        let dir = try TempDirectory()
        let c = try dir.open().defaultCollection()
        // Different bodies: revision IDs hash the content.
        for (n, id) in ["b", "a", "c"].enumerated() { try c.save(try MutableDocument(id: id, data: ["n": n])) }
        let rev = try #require(try c.document(id: "b")?.revisionID)
        let byID = try MangoQuery(json: #"{"selector":{"_id":{"$gt":null}},"sort":["_id"]}"#)
        #expect(try byID.query(on: c).execute().map { $0.string(forKey: "id") ?? "" } == ["a", "b", "c"])
        let byRev = try MangoQuery(json: #"{"selector":{"_rev":"\#(rev)"}}"#)
        #expect(try byRev.query(on: c).execute().map { $0.string(forKey: "id") ?? "" } == ["b"])
        try c.delete(try #require(try c.document(id: "a")))
        let tombstones = try c.changes(since: 0, matching: ChangeSelector(["_deleted": true], for: c)).entries
        #expect(tombstones.map(\.id) == ["a"] && tombstones.first?.deleted == true)
        let live = try c.changes(since: 0, matching: ChangeSelector(["_deleted": ["$exists": false]], for: c)).entries
        #expect(live.map(\.id) == ["b", "c"])
    }

    /// A field named like its collection is a field, not the document.
    @Test func aFieldNamedLikeTheCollectionIsAField() throws {
        let dir = try TempDirectory()
        let tags = try dir.open().createCollection(name: "tags", scope: "app")
        try tags.save(try MutableDocument(id: "two", data: ["tags": ["a", "b"]]))
        try tags.save(try MutableDocument(id: "one", data: ["tags": ["a"]]))
        let find = try MangoQuery(json: #"{"selector":{"tags":{"$size":2}}}"#)
        #expect(try find.query(on: tags).execute().map { $0.string(forKey: "id") ?? "" } == ["two"])
        let feed = try tags.changes(since: 0, matching: ChangeSelector(["tags": ["$size": 2]], for: tags)).entries
        #expect(feed.map(\.id) == ["two"])
    }

    @Test func sortSkipLimitAndFields() throws {
        let dir = try TempDirectory()
        let db = try dir.open()
        let c = try db.defaultCollection()
        for (i, n) in [5, 3, 9, 1, 7].enumerated() { try c.save(try MutableDocument(id: "k\(i)", data: ["n": n, "odd": n % 2 == 1, "s": "v\(n)"])) }
        let find = try MangoQuery(json: #"{"selector":{"n":{"$gt":2}},"sort":[{"n":"desc"}],"skip":1,"limit":2,"fields":["s"]}"#)
        #expect(find.fields == ["s"])
        let rows = try find.query(on: c).execute().map { $0.string(forKey: "id") ?? "" }
        #expect(rows == ["k4", "k0"])  // 9 skipped, then 7 and 5
        for bad in [#"{"selector":{"n":{"$bogus":1}}}"#, #"{"selector":[]}"#, #"{"selector":{"n":{"$mod":[0,1]}}}"#,
                    #"{"selector":{"$or":{"n":1}}}"#, #"{"selector":{},"limit":-1}"#, #"{"selector":{"n":{"$gt":1,"x":2}}}"#] {
            #expect(throws: StoreError.self, "\(bad)") { try MangoQuery(json: bad).query(on: c) }
        }
    }
}

/// CouchDB's Mango matching, directly on values.
enum MangoReference {
    static func matches(_ selector: DocumentValue, _ doc: DocumentValue) -> Bool {
        guard case .dictionary(let members) = selector else { return false }
        return members.allSatisfy { key, argument in
            switch key {
            case "$and": return items(argument).allSatisfy { matches($0, doc) }
            case "$or": return items(argument).contains { matches($0, doc) }
            case "$nor": return !items(argument).contains { matches($0, doc) }
            case "$not": return !matches(argument, doc)
            default: return field(get(doc, key), argument)
            }
        }
    }

    private static func items(_ v: DocumentValue) -> [DocumentValue] { if case .array(let a) = v { return a } else { return [] } }

    static func get(_ doc: DocumentValue, _ path: String) -> DocumentValue? {
        var current: DocumentValue? = doc
        for key in path.split(separator: ".", omittingEmptySubsequences: false) {
            guard case .dictionary(let d)? = current else { return nil }
            current = d[String(key)]
        }
        return current
    }

    /// The conditions on a field's value `v` (nil: missing); a sub-field object looks inside `v`.
    private static func field(_ v: DocumentValue?, _ argument: DocumentValue) -> Bool {
        if case .dictionary(let d) = argument, !d.isEmpty {
            if d.keys.allSatisfy({ !$0.hasPrefix("$") }) {
                return d.allSatisfy { key, sub in field(v.flatMap { get($0, key) }, sub) }
            }
            return d.allSatisfy { condition($0.key, $0.value, v) }
        }
        return condition("$eq", argument, v)
    }

    private static func condition(_ op: String, _ operand: DocumentValue, _ v: DocumentValue?) -> Bool {
        if op == "$exists" { return (v != nil) == (operand == .bool(true)) }
        guard let v else { return false }
        switch op {
        case "$eq": return equal(v, operand)
        case "$ne": return !equal(v, operand)
        case "$gt": return compare(v, operand) > 0
        case "$gte": return compare(v, operand) >= 0
        case "$lt": return compare(v, operand) < 0
        case "$lte": return compare(v, operand) <= 0
        case "$in", "$nin":
            // An array is in the list when one of its elements is.
            let candidates: [DocumentValue]
            if case .array(let a) = v { candidates = a } else { candidates = [v] }
            let found = candidates.contains { c in items(operand).contains { equal(c, $0) } }
            return op == "$in" ? found : !found
        case "$type": return operand == .string(typeName(v))
        case "$size": if case .array(let a) = v { return .int(Int64(a.count)) == operand } else { return false }
        case "$mod":
            guard case .int(let x) = v, case .array(let pair) = operand, case .int(let d) = pair[0] else { return false }
            return .int(x % d) == pair[1]
        case "$regex":
            guard case .string(let s) = v, case .string(let p) = operand, let re = try? NSRegularExpression(pattern: p) else { return false }
            return re.firstMatch(in: s, range: NSRange(s.startIndex..., in: s)) != nil
        case "$all":
            guard case .array(let a) = v, !items(operand).isEmpty else { return false }
            return items(operand).allSatisfy { wanted in a.contains { equal($0, wanted) } }
        case "$elemMatch", "$allMatch":
            guard case .array(let a) = v, !a.isEmpty else { return false }
            return op == "$elemMatch" ? a.contains { elementMatches($0, operand) } : a.allSatisfy { elementMatches($0, operand) }
        case "$not":
            return !field(v, operand)
        default: return false
        }
    }

    /// A `$elemMatch` selector on one element: operators on the element, names on its members.
    private static func elementMatches(_ e: DocumentValue, _ selector: DocumentValue) -> Bool {
        guard case .dictionary(let d) = selector else { return false }
        return d.allSatisfy { key, argument in
            switch key {
            case "$and": return items(argument).allSatisfy { elementMatches(e, $0) }
            case "$or": return items(argument).contains { elementMatches(e, $0) }
            case "$nor": return !items(argument).contains { elementMatches(e, $0) }
            case "$not": return !elementMatches(e, argument)
            case _ where key.hasPrefix("$"): return condition(key, argument, e)
            default: return field(get(e, key), argument)
            }
        }
    }

    static func typeName(_ v: DocumentValue) -> String {
        switch v {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .dictionary, .blob: return "object"
        }
    }

    private static func number(_ v: DocumentValue) -> Double? {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    private static func equal(_ a: DocumentValue, _ b: DocumentValue) -> Bool {
        if let x = number(a), let y = number(b) { return x == y }
        return typeName(a) == typeName(b) && a.toJSON() == b.toJSON()
    }

    /// CouchDB's order of types, then by value; strings by UTF-8 bytes, arrays and objects by their canonical JSON text.
    private static func compare(_ a: DocumentValue, _ b: DocumentValue) -> Int {
        let order = ["null", "boolean", "number", "string", "array", "object"]
        let ra = order.firstIndex(of: typeName(a))!, rb = order.firstIndex(of: typeName(b))!
        if ra != rb { return ra < rb ? -1 : 1 }
        if let x = number(a), let y = number(b) { return x == y ? 0 : (x < y ? -1 : 1) }
        let x: [UInt8], y: [UInt8]
        switch (a, b) {
        case (.bool(let p), .bool(let q)): return p == q ? 0 : (p ? 1 : -1)
        case (.string(let p), .string(let q)): x = Array(p.utf8); y = Array(q.utf8)
        default: x = Array(a.toJSON().utf8); y = Array(b.toJSON().utf8)
        }
        return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
    }
}

/// Random field values and selectors over them.
enum MangoGenerator {
    static let scalars: [DocumentValue] = [.null, true, false, 0, 1, 2, 5, -3, 2.5, "", "a", "b", "B", "ab", "é"]

    static func pick<T>(_ items: [T], _ random: inout SeededRandom) -> T { items[Int(random.next() % UInt64(items.count))] }

    static func value(_ field: String, _ random: inout SeededRandom) -> DocumentValue? {
        if random.next() % 6 == 0 { return nil }
        switch field {
        case "tags":
            return random.next() % 5 == 0 ? pick(scalars, &random) : .array((0..<Int(random.next() % 4)).map { _ in pick(["x", "y", "z", 1, 2] as [DocumentValue], &random) })
        case "nested":
            var d: [String: DocumentValue] = [:]
            if random.next() % 4 != 0 { d["x"] = pick(scalars, &random) }
            if random.next() % 4 != 0 { d["y"] = pick([1, 2, 3, "q"] as [DocumentValue], &random) }
            return .dictionary(d)
        default:
            return pick(scalars, &random)
        }
    }

    static func selector(_ random: inout SeededRandom, depth: Int) -> DocumentValue {
        if depth < 2, random.next() % 5 == 0 {
            let op = pick(["$and", "$or", "$nor", "$not"], &random)
            if op == "$not" { return ["$not": selector(&random, depth: depth + 1)] }
            return [op: .array((0..<(1 + Int(random.next() % 3))).map { _ in selector(&random, depth: depth + 1) })]
        }
        var members: [String: DocumentValue] = [:]
        for _ in 0..<(1 + Int(random.next() % 2)) {
            let field = pick(["a", "b", "tags", "nested.x", "nested.y", "nested", "missing"], &random)
            members[field] = condition(field, &random, depth: depth)
        }
        return .dictionary(members)
    }

    static func condition(_ field: String, _ random: inout SeededRandom, depth: Int) -> DocumentValue {
        let scalar = pick(scalars, &random)
        switch random.next() % 17 {
        case 0: return scalar
        case 1: return ["$eq": scalar]
        case 2: return ["$ne": scalar]
        case 3: return [pick(["$gt", "$gte", "$lt", "$lte"], &random): scalar]
        case 4: return [pick(["$in", "$nin"], &random): .array((0..<Int(random.next() % 4)).map { _ in pick(scalars, &random) })]
        case 5: return ["$exists": .bool(random.next() % 2 == 0)]
        case 6: return ["$type": .string(pick(["null", "boolean", "number", "string", "array", "object"], &random))]
        case 7: return ["$size": .int(Int64(random.next() % 3))]
        case 8: return ["$mod": [.int(pick([2, 3, -2], &random)), .int(pick([0, 1, -1], &random))]]
        case 9: return ["$regex": .string(pick(["^a", "b$", "[aé]", "^$"], &random))]
        case 10: return ["$all": .array((0..<Int(random.next() % 3)).map { _ in pick(["x", "y", 1] as [DocumentValue], &random) })]
        case 11: return [pick(["$elemMatch", "$allMatch"], &random): pick([["$eq": "x"], ["$gt": 1], ["$in": ["y", 2]], ["$type": "string"]] as [DocumentValue], &random)]
        case 12: return ["$not": condition(field, &random, depth: depth + 1)]
        case 13: return [pick(["$gt", "$lt"], &random): scalar, pick(["$ne", "$lte"], &random): pick(scalars, &random)]
        case 14: return ["x": pick(scalars, &random)]  // a sub-field of an object
        case 15: return ["$elemMatch": ["$or": [["$eq": "z"], ["$eq": 1]]]]
        default: return [pick(["$gte", "$lte"], &random): pick([[] as DocumentValue, [1] as DocumentValue, [:] as DocumentValue, ["x": 1] as DocumentValue], &random)]
        }
    }
}
