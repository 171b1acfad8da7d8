import Crypto
import Foundation
import Hummingbird
import SyncNodeStore

extension Handlers {
    /// `POST /{db}/_find`: a Mango query (`MangoQuery`) answered as CouchDB
    /// does: `docs`, a `bookmark` that continues after them, a `warning` when
    /// no index served the query, and `execution_stats` when asked.
    func find(_ request: Request, collection c: DocumentCollection) async throws -> Response {
        var body = try await request.jsonObject(limit: bodyLimit)
        // The bookmark is where the previous page ended (what a client sends back as it got it).
        if case .string(let bookmark)? = body["bookmark"], !bookmark.isEmpty, bookmark != "nil" {
            guard let skipped = Self.skip(bookmark: bookmark) else { throw CouchError.badRequest("Invalid bookmark value: \(bookmark)") }
            var skip: Int64 = 0
            if case .int(let n)? = body["skip"], n >= 0 { skip = min(n, Int64(Int32.max)) }
            body["skip"] = .int(Int64(skipped) + skip)  // MangoQuery refuses a sum beyond Int32.max
        }
        let started = ContinuousClock.now
        let find = try MangoQuery(body)
        let query = try find.query(on: c, includingDocuments: false)
        // The revisions the query names, not their bodies: each (id, rev) names an unchanging
        // revision, so reading bodies afterwards cannot slip in a document that does not match.
        let matches: [(id: String, rev: String)] = try query.execute().compactMap { row in
            guard let id = row.string(forKey: "id"), let rev = row.string(forKey: "rev") else { return nil }
            return (id, rev)
        }
        var warning: String?
        let known = find.useIndex.isEmpty ? [] : try Set(c.indexes)
        if let missing = find.useIndex.first(where: { !known.contains(Self.indexName(designDocument: $0)) }) {
            warning = "\(missing) was not found, or is not a valid index for this query."
        } else if !(try query.explain()).split(separator: "\n").contains(where: { $0.hasPrefix("SEARCH") && $0.contains(" USING ") }) {
            // SQLite's plan steps name any index they search ("SEARCH s0 USING INDEX ..."); the SQL above them is not looked at.
            warning = "No matching index found, create an index to optimize query time."
        }
        let wantsStats = body["execution_stats"] == .bool(true)
        return AnswerStream.response(budget: answerBudget) { [self, warning] stream, writer in
            stream.json.writeRaw(#"{"docs":["#)
            var sent = 0
            defer { metrics.documentsRead(sent) }
            var next = 0
            while next < matches.count {
                let run = try AnswerStream.run(count: matches.count, from: next, in: c) { index in
                    try AnswerStream.body(of: matches[index].id, rev: matches[index].rev, in: c)
                }
                for (offset, body) in run.enumerated() {
                    // Compacted away since the query ran: no longer there to send.
                    guard let body else { continue }
                    let (id, rev) = matches[next + offset]
                    if sent > 0 { stream.json.writeRaw(",") }
                    try await stream.writeDocument(
                        id: id, rev: rev, deleted: false, body: body, simple: find.fields == nil, collection: c, to: &writer
                    ) { text in
                        let wire = try WireDocument.encode(id: id, rev: rev, deleted: false, body: text, collection: c)
                        guard let fields = find.fields else { return wire }
                        return Self.project(try DocumentValue(json: wire), fields: fields).toJSON()
                    }
                    sent += 1
                }
                next += run.count
            }
            stream.json.writeRaw(#"],"bookmark":"#)
            stream.json.writeString(Self.bookmark(skip: find.skip + sent))
            if let warning {
                stream.json.writeRaw(#","warning":"#)
                stream.json.writeString(warning)
            }
            if wantsStats {
                let elapsed = started.duration(to: .now)
                let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
                stream.json.writeRaw(#","execution_stats":"#)
                stream.json.writeRaw(DocumentValue.dictionary([
                    "results_returned": .int(Int64(sent)), "execution_time_ms": .double(milliseconds),
                ]).toJSON())
            }
            stream.json.writeRaw("}")
        }
    }

    /// `GET /{db}/_index`: the indexes, value indexes as CouchDB's `json` ones.
    func indexes(of c: DocumentCollection) throws -> Response {
        var indexes: [DocumentValue] = [
            ["ddoc": .null, "name": "_all_docs", "type": "special", "def": ["fields": [["_id": "asc"]]]],
        ]
        for (name, definition) in try c.indexDefinitions {
            var def: [String: DocumentValue]
            let type: String
            switch definition {
            case .value(let expressions):
                (type, def) = ("json", ["fields": .array(expressions.map { [Self.mangoField($0): "asc"] })])
            case .fullText(let properties, _, _):
                (type, def) = ("text", ["fields": .array(properties.map { [$0: "asc"] })])
            case .selector(let json):
                // CouchDB's shape for a partial index, so the listing's DELETE path (`json`) works.
                (type, def) = ("json", ["fields": [], "partial_filter_selector": (try? DocumentValue(json: json)) ?? .string(json)])
            }
            indexes.append(["ddoc": .string("_design/\(name)"), "name": .string(name), "type": .string(type), "partitioned": false,
                            "def": .dictionary(def)])
        }
        return HTTP.json(["total_rows": .int(Int64(indexes.count)), "indexes": .array(indexes)])
    }

    /// `POST /{db}/_index`: a value index on `index.fields`.
    func createIndex(_ request: Request, in c: DocumentCollection) async throws -> Response {
        let body = try await request.jsonObject(limit: bodyLimit)
        guard case .dictionary(let spec)? = body["index"], case .array(let list)? = spec["fields"], !list.isEmpty else {
            throw CouchError.badRequest("Missing required key: index.fields (a non-empty array)")
        }
        if case .string(let type)? = body["type"], type != "json" {
            throw CouchError.badRequest("only \"json\" indexes are supported, not \"\(type)\"")
        }
        let fields: [String] = try list.map { item in
            switch item {
            case .string(let f) where !f.isEmpty: return f
            case .dictionary(let d) where d.count == 1: return d.keys.first ?? ""
            default: throw CouchError.badRequest("index.fields holds field names or {\"field\": \"asc\"|\"desc\"}")
            }
        }
        let expressions = try fields.map { field in
            guard !field.contains("`") else { throw CouchError.badRequest("a field name cannot contain a backquote: \(field)") }
            return Self.expression(mangoField: field)
        }
        // A generated name is the same for the same fields, so asking twice finds the index there.
        var name = "mango-" + SHA256.hash(data: Data(fields.joined(separator: ",").utf8)).prefix(8).map { String(format: "%02x", $0) }.joined()
        if case .string(let given)? = body["name"], !given.isEmpty { name = given }
        let existed = try c.indexes.contains(name)
        try c.createIndex(ValueIndexConfiguration(expressions), name: name)
        return HTTP.json(["result": existed ? "exists" : "created", "id": .string("_design/\(name)"), "name": .string(name)])
    }

    /// `DELETE /{db}/_index/{ddoc}/json/{name}`.
    func deleteIndex(_ name: String, in collection: DocumentCollection) throws -> Response {
        try collection.deleteIndex(name: name)
        return HTTP.json(HTTP.ok)
    }

    /// `a.b` as an index expression: each name backquoted, so any name is a path.
    static func expression(mangoField field: String) -> String {
        MangoQuery.path(field).map { "`\($0)`" }.joined(separator: ".")
    }

    /// An index expression as a Mango field, where it is a plain path.
    static func mangoField(_ expression: String) -> String {
        let parts = expression.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.allSatisfy({ $0.count >= 2 && $0.hasPrefix("`") && $0.hasSuffix("`") }) else { return expression }
        return parts.map { $0.dropFirst().dropLast() }.joined(separator: ".")
    }

    /// `_design/x` (or `x`) names index `x`: each index is listed as a design document of its own.
    static func indexName(designDocument text: String) -> String {
        text.hasPrefix("_design/") ? String(text.dropFirst(8)) : text
    }

    static func bookmark(skip: Int) -> String {
        Data("\(skip)".utf8).base64EncodedString()
    }

    static func skip(bookmark: String) -> Int? {
        Data(base64Encoded: bookmark).flatMap { String(data: $0, encoding: .utf8) }.flatMap { Int($0) }.flatMap { $0 >= 0 ? $0 : nil }
    }

    /// Only the named fields (dotted paths), nested as in the document.
    static func project(_ doc: DocumentValue, fields: [String]) -> DocumentValue {
        var out: [String: DocumentValue] = [:]
        for field in fields {
            let path = MangoQuery.path(field)
            var value: DocumentValue? = doc
            for key in path { value = value?[key] }
            guard let value else { continue }
            out = insert(value, at: path[...], into: out)
        }
        return .dictionary(out)
    }

    private static func insert(_ value: DocumentValue, at path: ArraySlice<String>, into object: [String: DocumentValue]) -> [String: DocumentValue] {
        guard let first = path.first else { return object }
        var object = object
        if path.count == 1 {
            object[first] = value
        } else {
            var inner: [String: DocumentValue] = [:]
            if case .dictionary(let d)? = object[first] { inner = d }
            object[first] = .dictionary(insert(value, at: path.dropFirst(), into: inner))
        }
        return object
    }
}
