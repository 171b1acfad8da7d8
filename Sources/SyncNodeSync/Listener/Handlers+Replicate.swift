import Foundation
import Hummingbird
import NIOCore
import SyncNodeStore

extension Handlers {
    /// `POST /_replicate` (CouchDB's API): runs the replicator between a
    /// database of this node and another one, here or at a URL. One-shot
    /// requests answer when done with CouchDB's history shape; continuous ones
    /// answer at once with `_local_id`, and `cancel: true` stops them.
    func replicate(_ routed: RoutedRequest) async throws -> Response {
        let (request, principal, connection) = (routed.request, routed.principal, routed.connection)
        // A peer may sync its scope, not make this node reach out to any URL it names.
        if principal.isPeer { throw CouchError.forbidden("Peers may not start replications here; \(principal.description) signed in by certificate.") }
        let body = try await request.jsonObject(limit: bodyLimit)
        let source = try local(Self.endpoint(body["source"], name: "source"))
        let target = try local(Self.endpoint(body["target"], name: "target"))
        let continuous = body["continuous"] == .bool(true)
        var timeoutMilliseconds: Int64 = 30_000
        if let given = body["connection_timeout"] {
            guard case .int(let ms) = given, (100...600_000).contains(ms) else {
                throw CouchError.badRequest("connection_timeout must be milliseconds, 100 to 600000")
            }
            timeoutMilliseconds = ms
        }
        var documentIDs: [String]?
        if case .array(let ids)? = body["doc_ids"] {
            documentIDs = try ids.map { id in
                guard case .string(let s) = id else { throw CouchError.badRequest("doc_ids must be an array of strings") }
                return s
            }
        }
        var selector: DocumentValue?
        if let given = body["selector"] {
            guard case .dictionary = given else { throw CouchError.badRequest("selector must be a JSON object (a Mango selector)") }
            guard documentIDs == nil else { throw CouchError.badRequest("doc_ids and selector exclude each other") }
            selector = given
        }
        let id = Self.replicationID(source: source, target: target, continuous: continuous, documentIDs: documentIDs, selector: selector)
        // The asker's own access applies: reading the local source, writing (or creating) the local
        // target; cancelling a replication takes the access starting it would.
        let createTarget = body["create_target"] == .bool(true)
        if case .local(let keyspace) = source, try access(of: principal, to: keyspace.database) < .reader {
            throw CouchError.forbidden("\(principal.description) may not read '\(keyspace.name)'")
        }
        if case .local(let keyspace) = target {
            let database = keyspace.database
            if createTarget, !principal.isServerAdmin, try directory.database(database) == nil {
                throw CouchError.forbidden("Only server admins may create databases; \(principal.description) is not one.")
            }
            if try access(of: principal, to: database) < .writer { throw CouchError.forbidden("\(principal.description) may not write '\(keyspace.name)'") }
        }
        if body["cancel"] == .bool(true) {
            guard await replications.cancel(id: id) else { throw CouchError.notFound("no such replication is running") }
            return HTTP.json(["ok": true, "_local_id": .string(id)])
        }
        var config = try configuration(source: source, target: target, createTarget: createTarget)
        // What this node takes from a client, it takes from a peer.
        config.maxAttachmentSize = self.config.maxAttachmentSize
        // A local target's validator is told the asker wrote what arrives, not the peer it came from.
        config.localAuthor = WriteAuthor(name: principal.name, roles: principal.roles, origin: .client)
        config.documentIDs = documentIDs
        config.selector = selector
        _ = try ChangeFilter(config)
        config.continuous = continuous
        if !continuous {
            config.maxAttempts = 3
            // Someone waits on this answer: a peer that accepts connections and never answers
            // fails each attempt after CouchDB's `connection_timeout` (30 s by default), not 120 s.
            config.readTimeout = .milliseconds(timeoutMilliseconds)
            config.connectTimeout = min(config.connectTimeout, .milliseconds(timeoutMilliseconds))
        }
        let replicator = Replicator(config: config, logger: logger)
        if continuous {
            // It runs on after this request: it ends when its asker may no longer read its local
            // source or write its local target.
            let current = Authentication.ofRequest?.current
            let localSource: Keyspace? = if case .local(let keyspace) = source { keyspace } else { nil }
            let localTarget: Keyspace? = if case .local(let keyspace) = target { keyspace } else { nil }
            // (One side at least is local: two remote ends are refused above.)
            _ = replications.start(replicator, id: id) { [self] in
                localSource.map { stillAllowed(current, keyspace: $0) } ?? true
                    && localTarget.map { stillAllowed(current, keyspace: $0, needed: .writer) } ?? true
            }
            return HTTP.json(["ok": true, "_local_id": .string(id)], status: .accepted)
        }
        let started = Date()
        // The client waits on this request: a few quick attempts, not the minutes of backoff a background run may take.
        let result: ReplicationResult
        replications.tasks.add(replicator)
        defer { replications.tasks.remove(replicator) }
        // Its asker gone (the connection closed), nobody waits for the answer: the run stops.
        do {
            result = try await ClientDeparture.cancelling(on: connection) { try await replicator.runOnce() }
        } catch let error as StoreError {
            throw error  // this node's own failure, as any other request reports it
        } catch {
            // The peer's answer (a 401 from it, say) or its silence is not this request's status: 502, naming it.
            let peer = [source, target].lazy.compactMap { side -> String? in
                if case .remote(let url, _) = side { return WireURL.redacted(url) } else { return nil }
            }.first ?? "the other end"
            throw CouchError(status: 502, error: "replication_failed", reason: "replicating with \(peer) failed: \(error)")
        }
        let written = result.pushed + result.pulled
        let session = UUID().uuidString.lowercased()
        return HTTP.json([
            "ok": true, "session_id": .string(session), "source_last_seq": .null, "no_changes": .bool(written == 0),
            "history": [[
                "session_id": .string(session), "start_time": .string(HTTP.date(started)), "end_time": .string(HTTP.date(Date())),
                "docs_written": .int(Int64(written)), "docs_read": .int(Int64(written)),
                "missing_found": .int(Int64(written)), "doc_write_failures": 0,
            ]],
        ])
    }

    private enum Side: Equatable {
        case local(Keyspace)
        case remote(URL, headers: [String: String])
    }

    /// `"name"`, `"https://…/db"` or `{"url": "…", "headers": {…}}`.
    private static func endpoint(_ value: DocumentValue?, name: String) throws -> Side {
        var text: String
        var headers: [String: String] = [:]
        switch value {
        case .string(let s)?:
            text = s
        case .dictionary(let d)?:
            guard case .string(let s)? = d["url"] else { throw CouchError.badRequest("\(name).url must be a string") }
            text = s
            if case .dictionary(let h)? = d["headers"] {
                for (key, value) in h { if case .string(let v) = value { headers[key] = v } }
            }
        default:
            throw CouchError.badRequest("\(name) must be a database name or URL")
        }
        if text.contains("://") {
            guard let url = URL(string: text), ["http", "https"].contains(url.scheme?.lowercased() ?? "") else {
                throw CouchError.badRequest("\(name) is not an http(s) URL")
            }
            return .remote(url, headers: headers)
        }
        return .local(try keyspace(text.removingPercentEncoding ?? text))
    }

    /// A URL that names a database of this very node (its port, on one of this
    /// machine's addresses) is that database: replicating through HTTP to oneself
    /// would need credentials the request already proved, and CouchDB tools do name both ends by URL.
    private func local(_ side: Side) throws -> Side {
        guard case .remote(let url, _) = side, let port = port(), url.port == port, let host = url.host?.lowercased(),
              Self.isLoopback(host) || LocalAddresses.ipv4().contains(host) else { return side }
        let segments = url.path.split(separator: "/")
        guard segments.count == 1, let name = segments.first.map(String.init) else { return side }
        return .local(try Self.keyspace(name.removingPercentEncoding ?? name))
    }

    /// `localhost`, `::1` or a literal 127.x.y.z address (not a name that merely starts with "127.").
    static func isLoopback(_ host: String) -> Bool {
        if host == "localhost" || host == "::1" || host == "[::1]" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }

    private func configuration(source: Side, target: Side, createTarget: Bool) throws -> ReplicatorConfiguration {
        switch (source, target) {
        case (.local(let s), .local(let t)):
            var config = ReplicatorConfiguration(collection: try collection(s), target: .collection(try localTarget(t, create: createTarget)))
            config.replicatorType = .push
            return config
        case (.local(let s), .remote(let url, let headers)):
            var config = ReplicatorConfiguration(collection: try collection(s), target: .url(url))
            config.replicatorType = .push
            config.headers = headers
            return config
        case (.remote(let url, let headers), .local(let t)):
            var config = ReplicatorConfiguration(collection: try localTarget(t, create: createTarget), target: .url(url))
            config.replicatorType = .pull
            config.headers = headers
            // A server-side pull keeps the peer's conflicts, as CouchDB does.
            config.conflictResolver = nil
            return config
        case (.remote, .remote):
            throw CouchError.badRequest("one of source and target must be a database on this node")
        }
    }

    /// The local database written to: refused on a read-only node (also when both ends are here).
    private func localTarget(_ keyspace: Keyspace, create: Bool) throws -> DocumentCollection {
        try checkWritable()
        if create, config.databases == nil {
            _ = try directory.database(keyspace.database, create: true)
        }
        return try collection(keyspace)
    }

    private static func replicationID(source: Side, target: Side, continuous: Bool, documentIDs: [String]?, selector: DocumentValue?) -> String {
        func text(_ side: Side) -> String {
            switch side {
            case .local(let keyspace): return keyspace.name
            case .remote(let url, _): return WireURL.redacted(url)
            }
        }
        return Replicator.hexDigest([text(source), text(target), continuous ? "continuous" : "", (documentIDs ?? []).sorted().joined(separator: ",")]
                                    + (selector.map { ["selector:" + $0.toJSON()] } ?? []))
    }
}
