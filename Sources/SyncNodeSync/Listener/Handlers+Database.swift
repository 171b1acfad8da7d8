import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import SyncNodeStore

extension Handlers {
    /// `GET /{db}`: the collection's counts, sequence and sizes.
    func databaseInfo(_ keyspace: Keyspace) throws -> Response {
        let c = try collection(keyspace)
        let seq = try c.lastSequence()
        let count = try c.count
        // The file alone: clients ask this often, and the blob files would all be listed.
        let size = c.database.size(countingBlobs: false).file
        return HTTP.json([
            "db_name": .string(keyspace.name), "doc_count": .int(Int64(count)), "doc_del_count": .int(Int64(try c.deletedCount())),
            "update_seq": .int(seq), "committed_update_seq": .int(seq), "purge_seq": 0,
            "instance_start_time": "0", "compact_running": .bool(compactions.isRunning(c.database.name)), "disk_format_version": 8,
            "sizes": ["file": .int(Int64(size)), "external": .int(Int64(size)), "active": .int(Int64(size))],
            "props": [:],
        ])
    }

    /// `PUT /{db}`: a new database, or a new collection of one (`db.scope.collection`).
    func createDatabase(_ keyspace: Keyspace) throws -> Response {
        let (name, scope, collectionName) = (keyspace.database, keyspace.scope, keyspace.collection)
        guard config.databases == nil || isServed(name) else { throw CouchError.forbidden("This node serves a fixed list of databases.") }
        // Every name is checked before anything is made: a refused collection must not leave its database behind.
        try Names.validateDatabase(name)
        if let scope, let collectionName {
            try Names.validateCollectionOrScope(scope, kind: "scope")
            try Names.validateCollectionOrScope(collectionName, kind: "collection")
        }
        let existing = try directory.database(name)
        let collectionExists = try existing.map { try $0.collection(name: collectionName ?? Names.defaultCollection, scope: scope) != nil } ?? false
        if existing != nil, scope == nil || collectionExists {
            throw CouchError(status: 412, error: "file_exists", reason: "The database could not be created, the file already exists.")
        }
        guard let db = try directory.database(name, create: true) else { throw CouchError.notFound() }
        if let scope, let collectionName { try db.createCollection(name: collectionName, scope: scope) }
        return HTTP.json(HTTP.ok, status: .created, headers: [.location: "/\(keyspace.name)"])
    }

    /// `DELETE /{db}`: the database, or one collection of it.
    func deleteDatabase(_ keyspace: Keyspace) throws -> Response {
        let (name, scope, collectionName) = (keyspace.database, keyspace.scope, keyspace.collection)
        guard config.databases == nil else { throw CouchError.forbidden("This node serves a fixed list of databases.") }
        guard let db = try directory.database(name) else { throw CouchError.notFound("Database does not exist.") }
        if let scope, let collectionName {
            try db.deleteCollection(name: collectionName, scope: scope)
        } else {
            try directory.deleteDatabase(name)
        }
        return HTTP.json(HTTP.ok)
    }

    /// `POST /{db}`: a new document, its ID given or made.
    func postDocument(_ routed: RoutedRequest) async throws -> Response {
        let keyspace = try routed.keyspace
        let c = try collection(keyspace)
        let revision = WireRevision(object: try await routed.request.jsonObject(limit: bodyLimit))
        let id = try revision.decoded().id ?? WireID.random()
        let rev = try RevisionIntake(collection: c, author: routed.author).edit(revision, id: id)
        return HTTP.json(["ok": true, "id": .string(id), "rev": .string(rev)], status: .created,
                         headers: [.eTag: "\"\(rev)\"", .location: "/\(keyspace.name)/\(id)"])
    }

    /// `POST /{db}/_compact`: 202, compacting in the background.
    func compact(_ collection: DocumentCollection) -> Response {
        compactions.start(collection.database, logger: logger)
        return HTTP.json(HTTP.ok, status: .accepted)
    }

    /// `PUT /{db}/_revs_limit`: the generations of history kept.
    func setRevsLimit(_ request: Request, collection: DocumentCollection) async throws -> Response {
        guard case .int(let limit) = try await request.jsonBody(limit: 1024), limit >= 1, limit <= 1_000_000 else {
            throw CouchError.badRequest("_revs_limit takes a whole number from 1 to 1000000")
        }
        try collection.database.setRevsLimit(Int(limit))
        return HTTP.json(HTTP.ok)
    }

    // MARK: - _purge

    /// `{"docid": ["rev", ...]}`: forgets documents as if they had never been written (no
    /// tombstone, nothing replicates). A document goes when the revisions listed include every
    /// one of its leaves (checked in the purge's transaction); one listing only some leaves keeps
    /// them all and is answered with the revisions purged, none (the store purges whole documents).
    func purge(_ request: Request, collection: DocumentCollection) async throws -> Response {
        let body = try await request.jsonObject(limit: bodyLimit)
        guard body.count <= 1000 else { throw CouchError.badRequest("purge at most 1000 documents per request") }
        var purged: [String: DocumentValue] = [:]
        for (id, value) in body {
            guard case .array(let items) = value else { throw CouchError.badRequest("'\(id)': expected an array of revisions") }
            let revs = try items.map { item -> String in
                guard case .string(let rev) = item else { throw CouchError.badRequest("'\(id)': revisions are strings") }
                return rev
            }
            purged[id] = .array(try collection.purge(id: id, ifLeavesAmong: Set(revs)).map { .string($0) })
        }
        return HTTP.json(["purge_seq": .null, "purged": .dictionary(purged)], status: .created)
    }

    // MARK: - _query

    /// `{"query": "SELECT ...", "params": {"name": value}}` -> `{"results": [row, ...]}`;
    /// FROM names the database's collections (`_` is its default collection). The rows are
    /// written to a file as they are read, then sent from it (``QuerySpill``): a result of
    /// more than 4 GiB is refused (413), to be paged with LIMIT and OFFSET. A peer whose scope
    /// names some collections of the database may query only those (403 otherwise): the URL's
    /// keyspace does not bound what FROM and JOIN name.
    func query(_ request: Request, database: SyncNodeStore.Database, scope: PeerScope?) async throws -> Response {
        let body = try await request.jsonObject(limit: bodyLimit)
        guard case .string(let sql)? = body["query"] else { throw CouchError.badRequest("POST body must include a `query` string (SQL++)") }
        var parameters: [String: DocumentValue] = [:]
        switch body["params"] {
        case .dictionary(let p)?: parameters = p
        case nil, .null?: break
        default: throw CouchError.badRequest("`params` must be an object")
        }
        let query = try database.createQuery(sql)
        if let scope {
            // A collection that does not exist is refused alike: a scoped peer learns no names beyond
            // its scope. Other failures (a closed database, SQLite) keep their own answer.
            let forbidden = CouchError.forbidden("This peer may reach \(scope); the query reads a collection outside it (or one that does not exist).")
            let read: [DocumentCollection]
            do { read = try query.collections() } catch StoreError.invalidQuery { throw forbidden }
            guard read.allSatisfy({ scope.allows(Keyspace($0)) }) else { throw forbidden }
        }
        query.parameters = Parameters(parameters)
        // Run before the 200 goes out: a query that fails is answered with its error.
        let departure = if let channel = ClientDeparture.connection { await ClientDeparture.of(channel) } else { ClientDeparture?.none }
        let spill = try await QuerySpill.run(query, in: database.path, usage: querySpills, departure: departure)
        return AnswerStream.response(budget: answerBudget) { stream, writer in
            stream.json.writeRaw("{\"results\":[")
            try await stream.flush(&writer, all: true)
            try await spill.send(to: &writer)
            stream.json.writeRaw("]}")
        }
    }

    /// The wire JSON of a stored revision.
    func wireJSON(
        _ revision: StoredRevision, collection: DocumentCollection, revs: Bool = false, conflicts: [String]? = nil,
        attachments: WireDocument.AttachmentContent = .stubs
    ) throws -> String {
        try WireDocument.encode(
            id: revision.id, rev: revision.rev, deleted: revision.deleted, body: revision.body,
            revisions: revs ? revision.history : nil, conflicts: conflicts, attachments: attachments,
            collection: collection)
    }

    // MARK: - _revs_diff

    func revsDiff(_ request: Request, collection: DocumentCollection) async throws -> Response {
        let body = try await request.jsonObject(limit: bodyLimit)
        var asked: [String: [String]] = [:]
        for (id, value) in body {
            guard case .array(let revs) = value else { throw CouchError.badRequest("revs of '\(id)' must be an array") }
            asked[id] = revs.compactMap { $0.stringValue }
        }
        var out: [String: DocumentValue] = [:]
        for (id, diff) in try collection.revsDiff(asked) {
            var entry: [String: DocumentValue] = ["missing": .array(diff.missing.map { .string($0) })]
            if !diff.possibleAncestors.isEmpty { entry["possible_ancestors"] = .array(diff.possibleAncestors.map { .string($0) }) }
            out[id] = .dictionary(entry)
        }
        return HTTP.json(.dictionary(out))
    }

    // MARK: - _bulk_docs

    func bulkDocs(_ request: Request, collection: DocumentCollection, author: WriteAuthor) async throws -> Response {
        // Documents are split from the request text and canonicalized from it (no value tree each):
        // a replicator pushes thousands per request.
        let text = try await request.textBody(limit: bodyLimit)
        let docsArray = try JSONSkimmer.values(at: [.member("docs")], in: text)
        guard docsArray.count == 1, docsArray[0].hasPrefix("[") else { throw CouchError.badRequest("POST body must include a `docs` array") }
        let docs = try JSONSkimmer.values(at: [.each], in: docsArray[0])
        var newEdits = true
        if let flag = try JSONSkimmer.values(at: [.member("new_edits")], in: text).last { newEdits = flag != "false" }
        var results: [DocumentValue] = []
        let intake = RevisionIntake(collection: collection, author: author)
        try intake.inBatch {
            for doc in docs {
                var id: String?
                do {
                    guard doc.hasPrefix("{") else { throw CouchError.badRequest("each doc must be an object") }
                    let revision = try WireRevision(json: doc)
                    let incoming = try revision.decoded()
                    id = incoming.id
                    if newEdits {
                        let docID = incoming.id ?? WireID.random()
                        id = docID
                        let rev = try intake.edit(revision, id: docID)
                        results.append(["ok": true, "id": .string(docID), "rev": .string(rev)])
                    } else {
                        try intake.graft(revision)
                    }
                } catch {
                    guard let refusal = RevisionIntake.refusal(error) else { throw error }
                    results.append(Self.refusal(id, refusal))
                }
            }
        }
        return HTTP.json(.array(results), status: .created)
    }

    private static func refusal(_ id: String?, _ error: CouchError) -> DocumentValue {
        ["id": id.map { .string($0) } ?? .null, "error": .string(error.error), "reason": .string(error.reason)]
    }
}
