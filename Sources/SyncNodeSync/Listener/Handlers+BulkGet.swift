import Hummingbird
import SyncNodeStore

extension Handlers {
    /// `POST /{db}/_bulk_get`: the revisions `docs` names (`{"id","rev","atts_since"}`), each
    /// as `{"ok": doc}` or `{"error": ...}`, written as they are read (see ``AnswerStream``).
    /// With `latest`, the leaves descending from `rev`; with `revs`, each one's history.
    ///
    /// With `attachments` and `Accept: multipart/mixed`, a `multipart/mixed` answer instead: one
    /// part per revision, the content of the attachments the asker lacks (not in its
    /// `atts_since`) following each one's JSON as bytes, read from the blob files as the client
    /// takes them. A node's replicator fetches a batch's attachments so, in one request.
    func bulkGet(_ request: Request, collection: DocumentCollection) async throws -> Response {
        let query = QueryOptions(request.uri)
        let revs = try query.bool("revs")
        let latest = try query.bool("latest")
        let wantAttachments = try query.bool("attachments")
        let body = try await request.jsonObject(limit: bodyLimit)
        guard case .array(let asked)? = body["docs"] else { throw CouchError.badRequest("POST body must include a `docs` array") }
        let entries = asked.map(BulkGetEntry.init)
        if wantAttachments, request.headers[.accept]?.lowercased().contains("multipart/mixed") == true {
            return multipartBulkGet(entries, revs: revs, latest: latest, collection: collection)
        }
        @Sendable func run(from start: Int) throws -> [[StreamedRevision]] {
            try AnswerStream.run(count: entries.count, from: start, in: collection) { index in
                let found = try entries[index].revisions(in: collection, latest: latest)
                return (found, found.reduce(0) { $0 + $1.bytesRead })
            }
        }
        // Read before the answer starts, so that a failing store gets an error status, not a cut 200.
        let first = try run(from: 0)
        return AnswerStream.response(budget: answerBudget) { [self] stream, writer in
            stream.json.writeRaw(#"{"results":["#)
            var served = 0
            defer { metrics.documentsRead(served) }
            var next = 0
            var pending = Optional(first)
            while next < entries.count {
                let run = try pending.take() ?? run(from: next)
                for (offset, found) in run.enumerated() {
                    let entry = entries[next + offset]
                    if next + offset > 0 { stream.json.writeRaw(",") }
                    guard let id = entry.id else {
                        stream.json.writeRaw(#"{"id":null,"docs":[{"error":{"id":null,"rev":null,"error":"bad_request","reason":"each entry needs an id"}}]}"#)
                        continue
                    }
                    stream.json.writeRaw(#"{"id":"#)
                    stream.json.writeString(id)
                    stream.json.writeRaw(#","docs":["#)
                    var any = false
                    for revision in found {
                        guard let body = revision.body else { continue }
                        stream.json.writeRaw(any ? #",{"ok":"# : #"{"ok":"#)
                        try await stream.writeDocument(
                            id: id, rev: revision.rev, deleted: revision.deleted, body: body, revisions: revs ? revision.history : nil,
                            inliningAttachments: wantAttachments, collection: collection, to: &writer
                        ) { text in
                            let stored = revision.stored(body: text)
                            let mode = wantAttachments ? try WireDocument.attachments(of: stored, attsSince: entry.attsSince, collection: collection) : .stubs
                            return try wireJSON(stored, collection: collection, revs: revs, attachments: mode)
                        }
                        stream.json.writeRaw("}")
                        any = true
                        served += 1
                    }
                    if !any {
                        stream.json.writeRaw(#"{"error":{"id":"#)
                        stream.json.writeString(id)
                        stream.json.writeRaw(#","rev":"#)
                        if let rev = entry.rev { stream.json.writeString(rev) } else { stream.json.writeRaw("null") }
                        stream.json.writeRaw(#","error":"not_found","reason":"missing"}}"#)
                    }
                    stream.json.writeRaw("]}")
                    try await stream.flush(&writer)
                }
                next += run.count
            }
            stream.json.writeRaw("]}")
        }
    }
}

extension Handlers {
    /// The `multipart/mixed` answer of ``bulkGet(_:collection:)``: a part per revision found, an
    /// `application/json; error="true"` part (`{"id","rev","error","reason"}`) for each entry
    /// that names none.
    private func multipartBulkGet(_ entries: [BulkGetEntry], revs: Bool, latest: Bool, collection: DocumentCollection) -> Response {
        let budget = answerBudget, metrics = metrics
        return MultipartMixed.response { boundary, writer in
            var stream = AnswerStream(budget: budget)
            var served = 0
            defer { metrics.documentsRead(served) }
            for entry in entries {
                var any = false
                for revision in try entry.revisions(in: collection, latest: latest, readingAtMost: -1) {
                    guard try await MultipartMixed.writeRevision(
                        id: entry.id ?? "", revision, revs: revs, attsSince: entry.attsSince, collection: collection,
                        boundary: boundary, stream: &stream, to: &writer) else { continue }
                    any = true
                    served += 1
                }
                if !any {
                    let reason = entry.id == nil ? "each entry needs an id" : "missing"
                    let error: DocumentValue = [
                        "id": entry.id.map(DocumentValue.string) ?? .null, "rev": entry.rev.map(DocumentValue.string) ?? .null,
                        "error": .string(entry.id == nil ? "bad_request" : "not_found"), "reason": .string(reason),
                    ]
                    try await MultipartMixed.write(.init(json: error.toJSON(), error: true), boundary: boundary, to: &writer)
                }
            }
        }
    }
}

/// One entry of a `_bulk_get` request.
private struct BulkGetEntry: Sendable {
    let id: String?
    let rev: String?
    let attsSince: [String]

    init(_ item: DocumentValue) {
        guard case .dictionary(let spec) = item, case .string(let id)? = spec["id"] else {
            (id, rev, attsSince) = (nil, nil, [])
            return
        }
        self.id = id
        rev = spec["rev"]?.stringValue
        if case .array(let atts)? = spec["atts_since"] { attsSince = atts.compactMap { $0.stringValue } } else { attsSince = [] }
    }

    /// The revisions it names: `rev` (the winner without), or with `latest` the leaves descending from `rev`.
    /// Bodies up to `readingAtMost` bytes are read with them (-1: none).
    func revisions(in collection: DocumentCollection, latest: Bool, readingAtMost limit: Int = AnswerStream.largeBody) throws -> [StreamedRevision] {
        guard let id else { return [] }
        if let rev, latest {
            return try collection.streamedLeaves(id: id, readingAtMost: limit).filter { $0.history.contains(rev) }
        }
        return try collection.streamedRevision(id: id, rev: rev, readingAtMost: limit).map { [$0] } ?? []
    }
}
