import Hummingbird
import SyncNodeStore

extension Handlers {
    /// `/{db}/_all_docs`: the live documents by ID, or those `keys` names, each with its
    /// winning revision and, with `include_docs`, its body; written as read, a page of IDs
    /// at a time (see ``AnswerStream``).
    func allDocs(_ request: Request, collection: DocumentCollection) async throws -> Response {
        let query = QueryOptions(request.uri)
        var keys: [DocumentValue]?
        if case .array(let k)? = try query.json("keys") { keys = k }
        if request.method == .post {
            let body = try await request.jsonObject(limit: bodyLimit)
            if case .array(let k)? = body["keys"] { keys = k }
        }
        if let key = try query.json("key") { keys = [key] }
        let includeDocs = try query.bool("include_docs")
        let skip = try query.int("skip") ?? 0
        // Every option is checked before the answer starts: an error afterwards could only cut it short.
        func stringKey(_ names: [String]) throws -> String? {
            for name in names {
                if let value = try query.json(name) {
                    guard case .string(let s) = value else { throw CouchError.badRequest("\(name) must be a JSON string") }
                    return s
                }
            }
            return nil
        }
        let range = AllDocsRange(
            start: try stringKey(["startkey", "start_key"]), end: try stringKey(["endkey", "end_key"]),
            inclusiveEnd: try query.bool("inclusive_end", default: true), descending: try query.bool("descending"),
            skip: skip, limit: try query.int("limit"))
        let total = try collection.count
        let maxBody = includeDocs ? AnswerStream.largeBody : -1
        @Sendable func keyedRun(_ keys: [DocumentValue], from start: Int) throws -> [StreamedRevision?] {
            try AnswerStream.run(count: keys.count, from: start, in: collection) { index -> (StreamedRevision?, bytes: Int) in
                guard case .string(let id) = keys[index],
                      let revision = try collection.streamedRevision(id: id, readingAtMost: maxBody) else { return (nil, 0) }
                return (revision, revision.bytesRead)
            }
        }
        @Sendable func readPage(after: String?, limit: Int) throws -> [(id: String, rev: String)] {
            try collection.liveRevisions(
                from: range.start, to: range.end, inclusiveEnd: range.inclusiveEnd, descending: range.descending,
                after: after, skip: after == nil ? range.skip : 0, limit: min(1000, limit))
        }
        // The first rows are read before the answer starts, so that a failing store gets an error status, not a cut 200.
        let firstRun = try keys.map { try keyedRun($0, from: 0) }
        let firstPage = keys == nil ? try readPage(after: nil, limit: range.limit ?? .max) : nil
        return AnswerStream.response(budget: answerBudget) { [self, keys] stream, writer in
            var served = 0
            defer { metrics.documentsRead(served) }
            stream.json.writeRaw(#"{"total_rows":"#)
            stream.json.writeInteger(Int64(total))
            stream.json.writeRaw(#","offset":"#)
            stream.json.writeInteger(Int64(skip))
            stream.json.writeRaw(#","rows":["#)
            var rows = 0
            func open(_ id: String, key: DocumentValue, rev: String) {
                if rows > 0 { stream.json.writeRaw(",") }
                rows += 1
                stream.json.writeRaw(#"{"id":"#)
                stream.json.writeString(id)
                stream.json.writeRaw(#","key":"#)
                stream.json.writeRaw(key.toJSON())
                stream.json.writeRaw(#","value":{"rev":"#)
                stream.json.writeString(rev)
            }
            func document(_ id: String, rev: String, body: RevisionBody?) async throws {
                stream.json.writeRaw(#"},"doc":"#)
                if let body {
                    try await stream.writeDocument(id: id, rev: rev, deleted: false, body: body, collection: collection, to: &writer) {
                        try WireDocument.encode(id: id, rev: rev, deleted: false, body: $0, collection: collection)
                    }
                    served += 1
                } else {
                    stream.json.writeRaw("null")
                }
                stream.json.writeRaw("}")
            }
            if let keys {
                var next = 0
                var pending = firstRun
                while next < keys.count {
                    let run = try pending.take() ?? keyedRun(keys, from: next)
                    for (offset, revision) in run.enumerated() {
                        let key = keys[next + offset]
                        guard let revision else {
                            if rows > 0 { stream.json.writeRaw(",") }
                            rows += 1
                            stream.json.writeRaw(#"{"key":"#)
                            stream.json.writeRaw(key.toJSON())
                            stream.json.writeRaw(#","error":"not_found"}"#)
                            continue
                        }
                        open(revision.id, key: key, rev: revision.rev)
                        if revision.deleted { stream.json.writeRaw(#","deleted":true"#) }
                        if includeDocs {
                            try await document(revision.id, rev: revision.rev, body: revision.deleted ? nil : revision.body ?? .text("{}"))
                        } else {
                            stream.json.writeRaw("}}")
                        }
                        try await stream.flush(&writer)
                    }
                    next += run.count
                }
            } else {
                var after: String?
                var remaining = range.limit ?? .max
                var pending = firstPage
                while remaining > 0 {
                    let page = try pending.take() ?? readPage(after: after, limit: remaining)
                    var next = 0
                    while next < page.count {
                        let run = try AnswerStream.run(count: page.count, from: next, in: collection) { index in
                            guard includeDocs else { return (RevisionBody?.none, 0) }
                            return try AnswerStream.body(of: page[index].id, rev: page[index].rev, in: collection)
                        }
                        for (offset, body) in run.enumerated() {
                            let (id, rev) = page[next + offset]
                            open(id, key: .string(id), rev: rev)
                            if includeDocs {
                                // A revision replaced since its page was read, and gone: `null`, as for a deleted one.
                                try await document(id, rev: rev, body: body)
                            } else {
                                stream.json.writeRaw("}}")
                            }
                            try await stream.flush(&writer)
                        }
                        next += run.count
                    }
                    guard page.count == min(1000, remaining), let last = page.last else { break }
                    after = last.id
                    remaining -= page.count
                }
            }
            stream.json.writeRaw("]}")
        }
    }
}

/// The ID range `_all_docs` lists without `keys`.
private struct AllDocsRange: Sendable {
    let start: String?
    let end: String?
    let inclusiveEnd: Bool
    let descending: Bool
    let skip: Int
    let limit: Int?
}
