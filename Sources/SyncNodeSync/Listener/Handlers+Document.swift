import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SyncNodeStore

extension Handlers {
    /// `PUT /{db}/{doc}`: JSON, or `multipart/related` with attachments; `new_edits=false`
    /// stores the revision as given, as replicators do.
    func putDocument(_ routed: RoutedRequest) async throws -> Response {
        let request = routed.request, keyspace = try routed.keyspace, id = try routed(.document)
        let c = try collection(keyspace)
        let query = QueryOptions(request.uri)
        let parsed: WireRevision
        if let boundary = request.headers[.contentType].flatMap(MultipartRelated.boundary(contentType:)) {
            // The JSON part is bounded like any JSON body; attachments stream into the blob store.
            // Parts carry their own encodings: the whole upload is never content-encoded.
            guard try ContentCoding(request) == .identity else {
                throw CouchError.unsupportedMediaType("a multipart/related upload is not content-encoded as a whole; gzip its attachments instead")
            }
            let (object, files) = try await MultipartRelated.read(
                request.body, boundary: boundary, jsonLimit: bodyLimit, attachmentLimit: config.maxAttachmentSize, into: c)
            parsed = WireRevision(object: object, files: files)
        } else {
            // Canonicalized from the text, as `_bulk_docs` does: no value tree of a body that may be 64 MB.
            parsed = try WireRevision(json: try await request.textBody(limit: bodyLimit))
        }
        var meta = parsed.meta
        if meta["_rev"] == nil, let rev = query["rev"] ?? request.headers[.ifMatch].map(unquote) { meta["_rev"] = .string(rev) }
        if let bodyID = meta["_id"], bodyID != .string(id) {
            throw CouchError.badRequest("_id in the body does not match the URL")
        }
        meta["_id"] = .string(id)
        let revision = parsed.replacing(meta: meta, files: parsed.files)
        let intake = RevisionIntake(collection: c, author: routed.author)
        if try !query.bool("new_edits", default: true) {
            try intake.graft(revision)
            return HTTP.json(["ok": true, "id": .string(id), "rev": .string(revision.rev)], status: .created)
        }
        let rev = try intake.edit(revision, id: id)
        return HTTP.json(["ok": true, "id": .string(id), "rev": .string(rev)], status: .created,
                         headers: [.eTag: "\"\(rev)\"", .location: "/\(keyspace.name)/\(id)"])
    }

    /// `DELETE /{db}/{doc}?rev=`: a tombstone on that revision.
    func deleteDocument(_ routed: RoutedRequest) throws -> Response {
        let request = routed.request, id = try routed(.document)
        let c = try collection(routed.keyspace)
        guard let rev = QueryOptions(request.uri)["rev"] ?? request.headers[.ifMatch].map(unquote) else {
            throw CouchError.conflict("Document update conflict: a rev is required to delete")
        }
        let deleted = try RevisionIntake(collection: c, author: routed.author).delete(id: id, rev: rev)
        return HTTP.json(["ok": true, "id": .string(id), "rev": .string(deleted)], headers: [.eTag: "\"\(deleted)\""])
    }

    /// A revision `open_revs` named that this node does not have.
    private struct MissingRevision: Error {
        let rev: String
    }

    private func unquote(_ s: String) -> String { s.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }

    /// `GET /{db}/{doc}`: one revision, or several (`open_revs`), as JSON or multipart.
    func getDocument(_ id: String, _ request: Request, in c: DocumentCollection) throws -> Response {
        let response = try documentAnswer(id, request, in: c)
        metrics.documentsRead(1)
        return response
    }

    private func documentAnswer(_ id: String, _ request: Request, in c: DocumentCollection) throws -> Response {
        let query = QueryOptions(request.uri)
        let revs = try query.bool("revs")
        var attsSince: [String]?
        if case .array(let atts)? = try query.json("atts_since") {
            attsSince = atts.compactMap { $0.stringValue }
        }
        // A multipart open_revs answer always carries the attachments the asker lacks (CouchDB's replicator never asks for them).
        let multipart = query["open_revs"] != nil && request.headers[.accept]?.lowercased().contains("multipart/mixed") == true
        let inline = try query.bool("attachments") || attsSince != nil || multipart
        let since = attsSince ?? []
        @Sendable func attachments(_ revision: StoredRevision) throws -> WireDocument.AttachmentContent {
            inline ? try WireDocument.attachments(of: revision, attsSince: since, collection: c) : .stubs
        }

        if let openRevs = query["open_revs"] {
            var wanted: [String]?
            if openRevs != "all" {
                guard case .array(let list) = try query.json("open_revs") ?? .null else {
                    throw CouchError.badRequest("open_revs must be \"all\" or a JSON array of revisions")
                }
                wanted = list.compactMap { $0.stringValue }
            }
            // What to send, in order: revisions (their bodies read as they are sent), and revisions asked for that this node lacks.
            var plan: [Swift.Result<StreamedRevision, MissingRevision>] = []
            if let wanted {
                let latest = try query.bool("latest")
                let leaves = latest ? try c.streamedLeaves(id: id, readingAtMost: -1) : []
                for rev in wanted {
                    let matches = latest ? leaves.filter { $0.history.contains(rev) } : try c.streamedRevision(id: id, rev: rev, readingAtMost: -1).map { [$0] } ?? []
                    if matches.isEmpty { plan.append(.failure(MissingRevision(rev: rev))) }
                    plan += matches.map { .success($0) }
                }
            } else {
                plan = try c.streamedLeaves(id: id, readingAtMost: -1).map { .success($0) }
            }
            let budget = answerBudget, sending = plan
            // CouchDB's replicator asks for multipart/mixed and cannot read a JSON array.
            if multipart {
                return MultipartMixed.response { boundary, writer in
                    var stream = AnswerStream(budget: budget)
                    for entry in sending {
                        let revision: StreamedRevision
                        switch entry {
                        case .success(let found): revision = found
                        case .failure(let missing):
                            let json = (["missing": .string(missing.rev)] as DocumentValue).toJSON()
                            try await MultipartMixed.write(.init(json: json, error: true), boundary: boundary, to: &writer)
                            continue
                        }
                        try await MultipartMixed.writeRevision(
                            id: id, revision, revs: revs, attsSince: since, collection: c, boundary: boundary, stream: &stream, to: &writer)
                    }
                }
            }
            return AnswerStream.response(budget: budget) { stream, writer in
                stream.json.writeRaw("[")
                var first = true
                for entry in sending {
                    switch entry {
                    case .success(let revision):
                        guard let body = try c.body(id: id, rev: revision.rev, readingAtMost: AnswerStream.largeBody) else { continue }
                        stream.json.writeRaw(first ? #"{"ok":"# : #",{"ok":"#)
                        try await stream.writeDocument(
                            id: id, rev: revision.rev, deleted: revision.deleted, body: body, revisions: revs ? revision.history : nil,
                            inliningAttachments: inline, collection: c, to: &writer
                        ) { text in
                            let stored = revision.stored(body: text)
                            return try wireJSON(stored, collection: c, revs: revs, attachments: try attachments(stored))
                        }
                        stream.json.writeRaw("}")
                    case .failure(let missing):
                        stream.json.writeRaw(first ? #"{"missing":"# : #",{"missing":"#)
                        stream.json.writeString(missing.rev)
                        stream.json.writeRaw("}")
                    }
                    first = false
                }
                stream.json.writeRaw("]")
            }
        }

        guard let streamed = try c.streamedRevision(id: id, rev: query["rev"], readingAtMost: AnswerStream.largeBody),
              let body = streamed.body else {
            throw CouchError.notFound("missing")
        }
        // A deleted winner reads as missing unless its revision was asked for.
        if streamed.deleted, query["rev"] == nil { throw CouchError.notFound("deleted") }
        let etag = "\"\(streamed.rev)\""
        if let match = request.headers[.ifNoneMatch], match == etag {
            return Response(status: .notModified, headers: [.eTag: etag])
        }
        let conflicts = try query.bool("conflicts") ? try c.conflictingRevisions(id: id) : nil
        // As CouchDB: the winner's path, newest first, each available, deleted or missing (compacted away); not with ?rev=.
        // (`att_encoding_info` adds nothing: attachments are stored decoded, and identity ones carry no encoding fields.)
        let revsInfo: [DocumentValue]? = try query.bool("revs_info") && query["rev"] == nil ? try c.inSnapshot {
            try streamed.history.map { rev in
                // Measured, not read: an ancestor may be as large as the winner.
                let found = rev == streamed.rev ? streamed : try c.streamedRevision(id: id, rev: rev, readingAtMost: -1)
                let status = found?.body == nil ? "missing" : found?.deleted == true ? "deleted" : "available"
                return ["rev": .string(rev), "status": .string(status)]
            }
        } : nil
        @Sendable func encode(_ text: String) throws -> String {
            let stored = streamed.stored(body: text)
            let json = try wireJSON(stored, collection: c, revs: revs, conflicts: conflicts, attachments: attachments(stored))
            guard let revsInfo, case .dictionary(var object) = try DocumentValue(json: json) else { return json }
            object["_revs_info"] = .array(revsInfo)
            return DocumentValue.dictionary(object).toJSON()
        }
        if case .text(let text) = body, !(inline && WireDocument.hasBlobs(text)) {
            return HTTP.json(try encode(text), headers: [.eTag: etag])
        }
        // Large, or with attachments inline: written as read, under the answers' memory budget (see ``AnswerStream``).
        return AnswerStream.response(budget: answerBudget, headers: [.eTag: etag]) { stream, writer in
            try await stream.writeDocument(
                id: id, rev: streamed.rev, deleted: streamed.deleted, body: body, revisions: revs ? streamed.history : nil,
                simple: (conflicts?.isEmpty ?? true) && revsInfo == nil, inliningAttachments: inline,
                collection: c, to: &writer, encode: encode)
        }
    }

    // MARK: - Attachments

    /// `GET /{db}/{doc}/{attachment}`: one attachment's bytes, streamed from its blob file.
    func getAttachment(_ routed: RoutedRequest) throws -> Response {
        let (request, id, name) = (routed.request, try routed(.document), try routed(.attachment))
        let c = try collection(routed.keyspace)
        let query = QueryOptions(request.uri)
        guard let revision = try c.revision(id: id, rev: query["rev"]), !revision.deleted, let body = revision.body,
              case .dictionary(let values) = try DocumentValue(json: body),
              case .blob(let blob)? = AttachmentIntake.lookup(name, in: values) ?? nil else {
            throw CouchError.notFound("Document is missing attachment")
        }
        guard let (file, size) = c.blobFileAndLength(digest: blob.digest) else {
            throw CouchError.notFound("The attachment's content is not on this node")
        }
        let etag = "\"\(blob.digest)\""
        if request.headers[.ifNoneMatch] == etag { return Response(status: .notModified, headers: [.eTag: etag]) }
        // Whoever stored it chose its type: an HTML or SVG attachment opens as an inert document,
        // never as a page of this origin (where the dashboard's session cookie lives).
        let headers: HTTPFields = [.contentType: blob.contentType, .eTag: etag, .contentLength: "\(size)",
                                   .contentSecurityPolicy: "sandbox; default-src 'none'"]
        if request.method == .head { return Response(status: .ok, headers: headers) }
        return Response(status: .ok, headers: headers, body: Self.streaming(file, size: size))
    }

    /// `PUT /{db}/{doc}/{attachment}?rev=`: a new revision with these bytes as that attachment.
    func putAttachment(_ routed: RoutedRequest) async throws -> Response {
        let (request, id, name, author) = (routed.request, try routed(.document), try routed(.attachment), routed.author)
        let c = try collection(routed.keyspace)
        let query = QueryOptions(request.uri)
        let type = request.headers[.contentType].flatMap { $0.isEmpty ? nil : $0 } ?? "application/octet-stream"
        let parent = query["rev"] ?? request.headers[.ifMatch].map(unquote)
        let (digest, length) = try await AttachmentIntake.received(
            request.body, gzip: try ContentCoding(request) == .gzip, declaredMD5: try ContentCoding.declaredMD5(request),
            limit: config.maxAttachmentSize, into: c)
        let rev = try RevisionIntake(collection: c, author: author).editAttachments(id: id, rev: parent) { attachments in
            let revpos = Int64(WireDocument.childGeneration(of: parent))
            attachments[name] = ["@type": "blob", "digest": .string(digest), "length": .int(Int64(length)),
                                 "content_type": .string(type), "revpos": .int(revpos)]
        }
        return HTTP.json(["ok": true, "id": .string(id), "rev": .string(rev)], status: .created, headers: [.eTag: "\"\(rev)\""])
    }

    /// `DELETE /{db}/{doc}/{attachment}?rev=`: a new revision without it.
    func deleteAttachment(_ routed: RoutedRequest) throws -> Response {
        let (request, id, name, author) = (routed.request, try routed(.document), try routed(.attachment), routed.author)
        let c = try collection(routed.keyspace)
        let query = QueryOptions(request.uri)
        guard let parent = query["rev"] ?? request.headers[.ifMatch].map(unquote) else {
            throw CouchError.conflict("Document update conflict: a rev is required")
        }
        let rev = try RevisionIntake(collection: c, author: author).editAttachments(id: id, rev: parent) { attachments in
            guard attachments.removeValue(forKey: name) != nil else { throw CouchError.notFound("Document is missing attachment") }
        }
        return HTTP.json(["ok": true, "id": .string(id), "rev": .string(rev)])
    }

    /// A file's bytes as a response body, read a piece at a time as the client takes them.
    private static func streaming(_ file: URL, size: Int) -> ResponseBody {
        ResponseBody(contentLength: size) { writer in
            let reader = try AttachmentReader(url: file, length: size)
            while !reader.isDone {
                var piece = ByteBuffer()
                try reader.read(into: &piece, upTo: 256 << 10)
                try await writer.write(piece)
            }
            try await writer.finish(nil)
        }
    }

    // MARK: - _local

    /// `GET /{db}/_local/{id}`: a replication checkpoint, stored verbatim.
    func localDocument(_ id: String, in c: DocumentCollection) throws -> Response {
        guard let doc = try c.localDocument(id: id) else { throw CouchError.notFound("missing") }
        return HTTP.json(try localJSON(doc), headers: [.eTag: "\"\(doc.rev)\""])
    }

    /// `PUT /{db}/_local/{id}`, by `writer`. Replicators overwrite their checkpoints; CouchDB does
    /// not check `_local` revisions strictly either.
    func putLocalDocument(_ id: String, _ request: Request, in c: DocumentCollection, writer: String?) async throws -> Response {
        var object = try await request.jsonObject(limit: bodyLimit)
        let rev = object.removeValue(forKey: "_rev")?.stringValue ?? QueryOptions(request.uri)["rev"]
        object["_id"] = nil
        let saved = try c.putLocalDocument(id: id, json: DocumentValue.dictionary(object).toJSON(), rev: rev, force: true, writer: writer)
        return HTTP.json(["ok": true, "id": .string("_local/\(id)"), "rev": .string(saved.rev)], status: .created)
    }

    /// Who a `_local` write is recorded as: the trusted peer whose certificate the client
    /// presents, even when it also signed in with a password (mesh peers send both), so the
    /// tombstone horizon can tell whose checkpoint it is; else the principal.
    func checkpointWriter(_ r: RoutedRequest) async -> String? {
        if let trust = config.trustedPeers, let fingerprint = await r.context.clientFingerprint(),
           let peer = trust.peer(clientFingerprint: fingerprint) {
            return peer.name
        }
        return r.principal.name
    }

    /// `DELETE /{db}/_local/{id}`.
    func deleteLocalDocument(_ id: String, _ request: Request, in c: DocumentCollection) throws -> Response {
        try c.deleteLocalDocument(id: id, rev: QueryOptions(request.uri)["rev"])
        return HTTP.json(["ok": true, "id": .string("_local/\(id)"), "rev": "0-0"])
    }

    private func localJSON(_ doc: LocalDocument) throws -> DocumentValue {
        guard case .dictionary(var d) = try DocumentValue(json: doc.body) else { return [:] }
        d["_id"] = .string("_local/\(doc.id)")
        d["_rev"] = .string(doc.rev)
        return .dictionary(d)
    }
}
