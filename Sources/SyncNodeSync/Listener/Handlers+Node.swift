import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import SyncNodeStore

/// `/_node/...`: what a node tells its administrators beyond CouchDB's API (the dashboard's
/// data). ``RouteTable/listener`` says who may ask each.
extension Handlers {
    /// `GET /_node/keyspaces`: what the asker may replicate here, narrowed to what the node offers.
    func offeredKeyspaces(to principal: Principal) throws -> Response {
        var listed = try keyspaces(readableBy: principal)
        if let offered = environment.offeredKeyspaces.map({ Set($0()) }) { listed = listed.filter(offered.contains) }
        return HTTP.json(.array(listed.map { .string($0.name) }))
    }

    /// `GET /_node/info`. The pairing URL carries an invitation: not for any cache.
    func info() -> Response {
        HTTP.json(nodeInfo, headers: [.cacheControl: "no-store"])
    }

    /// `GET /_node/qr.svg`: the pairing URL as a QR code.
    func pairingQRCode() throws -> Response {
        guard let svg = environment.console?.pairingQRCode else { throw CouchError.notFound("This node has no pairing URL.") }
        return Response(status: .ok, headers: [.contentType: "image/svg+xml", .cacheControl: "no-store"], body: ResponseBody(byteBuffer: ByteBuffer(string: svg)))
    }

    /// The node's peers and pairings; 404 on a listener that keeps none (not a mesh node).
    func peerConsole() throws -> any NodeConsole {
        guard let console = environment.console else { throw CouchError.notFound("This node keeps no peers.") }
        return console
    }

    /// `GET /_node/sync-status`.
    func syncStatus() throws -> Response {
        HTTP.json(SyncStatus(peers: try peerConsole().peers).json, headers: [.cacheControl: "no-store"])
    }

    /// `POST /_node/pair` `{"url": PAIRING_URL}`.
    func pair(_ request: Request) async throws -> Response {
        let console = try peerConsole()
        guard case .string(let text)? = try await request.jsonObject(limit: 64 * 1024)["url"] else {
            throw CouchError.badRequest("expected {\"url\": PAIRING_URL}")
        }
        let url: PairingURL
        do { url = try PairingURL(string: text) } catch { throw CouchError.badRequest("not a pairing URL: \(error)") }
        do { try await console.pair(with: url) } catch { throw CouchError.badRequest("cannot pair: \(error)") }
        return HTTP.json(HTTP.ok)
    }

    /// `DELETE /_node/invitations/{id}`: revokes it and untrusts the peers that redeemed it.
    func revokeInvitation(id: String) async throws -> Response {
        guard let revoked = try await peerConsole().revokeInvitation(id: id) else { throw CouchError.notFound("No invitation has that ID.") }
        return HTTP.json(["ok": true, "invitation": revoked.json])
    }

    /// `GET /_node/_local/_prometheus`: Prometheus text.
    func prometheus() -> Response {
        let text = metrics.scrape(directory: directory, served: isServed, tasks: replications.tasks, listener: status(), peers: environment.console?.peers)
        return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"], body: ResponseBody(byteBuffer: ByteBuffer(string: text)))
    }

    /// The node's identity and how to reach it.
    private var nodeInfo: DocumentValue {
        let console = environment.console
        return [
            "name": console.map { .string($0.name) } ?? .null,
            "uuid": .string(directory.uuid),
            "fingerprint": tlsIdentity().map { .string($0.fingerprint) } ?? .null,
            "pairing_url": console?.pairingURL.map { .string($0) } ?? .null,
            "version": .string(Self.version), "tls": .bool(!config.disableTLS), "read_only": .bool(config.readOnly),
        ]
    }

    /// `text/event-stream`: `peers` and `tasks` events, each sent at once and again when it
    /// changes (looked at every second), with a comment line every 15 s to keep proxies open.
    func events() -> Response {
        let console = environment.console, tasks = replications.tasks, audit = environment.auditLog
        // It runs on after the request: it ends once its asker is no longer a server admin.
        let current = Authentication.ofRequest?.current
        let body = ResponseBody { writer in
            var sent: [String: String] = [:]
            var lastWrite = ContinuousClock.now
            while !Task.isShuttingDownGracefully, !Task.isCancelled, current.map({ $0()?.isServerAdmin == true }) ?? true {
                var current = [
                    "tasks": DocumentValue.array(tasks.running.map(\.json)).toJSON(),
                    "audit": DocumentValue.array(audit.events.suffix(50).map(\.json)).toJSON(),
                ]
                if let console { current["peers"] = console.peers.toJSON() }
                for (event, data) in current.sorted(by: { $0.key < $1.key }) where sent[event] != data {
                    try await writer.write(ByteBuffer(string: "event: \(event)\ndata: \(data)\n\n"))
                    sent[event] = data
                    lastWrite = .now
                }
                if lastWrite.duration(to: .now) > .seconds(15) {
                    try await writer.write(ByteBuffer(string: ": heartbeat\n\n"))
                    lastWrite = .now
                }
                try await Task.sleep(for: .seconds(1))
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: [.contentType: "text/event-stream"], body: body)
    }

    /// `GET /_node/invitations`: the invitations kept (never a token).
    func invitations() throws -> Response {
        let all = try directory.invitations.list()
        return HTTP.json(.array(all.map(\.json)), headers: [.cacheControl: "no-store"])
    }

    /// `POST /_node/invitations` `{"keyspaces", "access", "expires" (seconds), "uses" (null: any
    /// number), "note"}` makes one and answers with it and its pairing URL (shown this once: only
    /// the token's hash is kept).
    func invite(_ request: Request) async throws -> Response {
        let console = try peerConsole()
        let body = try await request.jsonObject(limit: 64 * 1024)
        var scope = PeerScope.everything
        if case .array(let names)? = body["keyspaces"] {
            let texts = names.compactMap(\.stringValue)
            guard texts.count == names.count else { throw CouchError.badRequest("keyspaces must be an array of strings") }
            do {
                scope.keyspaces = try PeerScope.keyspaces(texts)
                try scope.validate()
            } catch SyncError.invalidConfiguration(let reason) {
                throw CouchError.badRequest(reason)
            }
        }
        if let access = body["access"]?.stringValue {
            guard let parsed = PeerScope.Access(rawValue: access) else { throw CouchError.badRequest("access must be read or write") }
            scope.access = parsed
        }
        var lifetime = Duration.seconds(15 * 60)
        if case .int(let seconds)? = body["expires"] { lifetime = .seconds(seconds) }
        var uses: Int? = 1
        if let given = body["uses"] {
            switch given {
            case .null: uses = nil
            case .int(let n): uses = Int(n)
            default: throw CouchError.badRequest("uses must be a number, or null for any number")
            }
        }
        let made: (invitation: Invitation, url: PairingURL)
        do {
            made = try await console.invite(scope: scope, lifetime: lifetime, uses: uses, note: body["note"]?.stringValue ?? "")
        } catch let error as SyncError {
            throw CouchError.badRequest("\(error)")
        }
        let url = made.url.url.absoluteString
        return HTTP.json(["ok": true, "invitation": made.invitation.json, "url": .string(url), "qr_svg": console.qrCode(url).map { .string($0) } ?? .null],
                         status: .created, headers: [.cacheControl: "no-store"])
    }

    /// `PUT /_node/trust/{fingerprint}`: trusts a peer's certificate (its replications start at once).
    func trust(fingerprint: String) async throws -> Response {
        let console = try peerConsole()
        try Self.checkFingerprint(fingerprint)
        try await console.trust(fingerprint: fingerprint)
        return HTTP.json(HTTP.ok)
    }

    /// `DELETE /_node/trust/{fingerprint}`: withdraws that trust (its replications stop at once).
    func untrust(fingerprint: String) async throws -> Response {
        let console = try peerConsole()
        try Self.checkFingerprint(fingerprint)
        guard try await console.untrust(fingerprint: fingerprint) else { throw CouchError.notFound("That fingerprint is not in the trusted-peers file (one given with --trust stays trusted until the node restarts without it).") }
        return HTTP.json(HTTP.ok)
    }

    private static func checkFingerprint(_ fingerprint: String) throws {
        guard TLSIdentity.isFingerprint(fingerprint) else {
            throw CouchError.badRequest("'\(fingerprint)' is not a certificate fingerprint (base64url SHA-256)")
        }
    }

    /// Each served database with its sizes and collections.
    func databasesJSON() throws -> DocumentValue {
        var out: [DocumentValue] = []
        for name in directory.databaseNames().filter(isServed) {
            guard let db = try directory.database(name) else { continue }
            let collections: [DocumentValue] = try db.allCollections().map { c in
                [
                    "keyspace": .string(Keyspace(c).name), "scope": .string(c.scopeName), "name": .string(c.name),
                    "doc_count": .int(Int64(try c.count)), "update_seq": .int(try c.lastSequence()),
                ]
            }
            let size = db.size()
            out.append([
                "name": .string(name), "size": .int(Int64(size.file)), "blob_size": .int(Int64(size.blobs)),
                "revs_limit": .int(Int64(db.revsLimit)), "collections": .array(collections),
            ])
        }
        return .array(out)
    }

    /// The collection's conflicted documents: `[{"id", "winner", "conflicts": [rev]}]`.
    func conflicts(in collection: DocumentCollection) throws -> DocumentValue {
        .array(try collection.conflictedDocumentIDs().map { id in
            let live = try collection.leafDocuments(id: id).filter { !$0.isDeleted }.compactMap(\.revisionID)
            return ["id": .string(id), "winner": live.first.map { .string($0) } ?? .null, "conflicts": .array(live.dropFirst().map { .string($0) })]
        })
    }

    /// `{"keep": rev, "leaves": [rev, ...]}`: keeps one live leaf and tombstones the others,
    /// provided the live leaves are still those the asker saw (409 otherwise).
    func resolve(_ request: Request, collection: DocumentCollection, id: String) async throws -> Response {
        let body = try await request.jsonObject(limit: bodyLimit)
        guard case .string(let keep)? = body["keep"], case .array(let seen)? = body["leaves"] else {
            throw CouchError.badRequest("expected {\"keep\": REV, \"leaves\": [REV, ...]}: the revision to keep and the live leaves you saw")
        }
        let leaves = try collection.leafDocuments(id: id).filter { !$0.isDeleted }
        guard !leaves.isEmpty else { throw CouchError.notFound("missing") }
        let seenRevs = Set(seen.compactMap { if case .string(let s) = $0 { s } else { nil } })
        guard Set(leaves.compactMap(\.revisionID)) == seenRevs else {
            throw CouchError(status: 409, error: "conflict", reason: "The document's leaves changed since you read them; read them again.")
        }
        let winner = try collection.resolveConflict(id: id, keeping: keep, of: leaves)
        return HTTP.json(["ok": true, "id": .string(id), "rev": winner.revisionID.map { .string($0) } ?? .null])
    }

    /// What a peer may replicate here (`GET /_node/keyspaces`, for peers whose DNS-SD record
    /// cannot list them all or who paired by URL): each database the asker may read, and
    /// `db.scope.collection` for its other collections.
    private func keyspaces(readableBy principal: Principal) throws -> [Keyspace] {
        var out: [Keyspace] = []
        for name in directory.databaseNames().filter(isServed) where try access(of: principal, to: name) >= .reader {
            // The database's own name first: its default collection is there even when empty.
            let whole = Keyspace.database(name)
            out.append(whole)
            guard let db = try directory.database(name) else { continue }
            out += try db.allCollections().map(Keyspace.init).filter { $0 != whole }
        }
        // A peer's scope may name some collections of a database and not others.
        return out.filter { principal.scope?.allows($0) ?? true }
    }
}
