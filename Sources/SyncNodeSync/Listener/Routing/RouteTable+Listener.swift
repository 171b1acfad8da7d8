import Hummingbird
import SyncNodeStore

extension RouteTable {
    /// Every endpoint the listener answers. `docs/HTTP-API.md` documents each one; a test
    /// checks the two agree.
    static let listener = RouteTable(server + node + database)

    /// Before sign-in, and the server's own endpoints.
    private static let server: [Route] = [
        Route(["_session"],
              .get(.open) { h, r in try await h.authentication.sessionInfo(r.request, context: r.context) },
              .post(.open, writes: false) { h, r in try await h.authentication.logIn(r.request, context: r.context) },
              .delete(.open, writes: false) { h, _ in h.authentication.logOut() }),
        Route(["_utils"], .get(.open) { _, r in try Dashboard.response(to: r.request) }),
        Route(["_utils", .any(.file)], .get(.open) { _, r in try Dashboard.response(to: r.request) }),
        Route([], .get(.signedIn) { h, _ in h.welcome() }),
        Route(["_up"], .get(.signedIn) { _, _ in HTTP.json(["status": "ok"]) }),
        Route(["_all_dbs"], .get(.signedIn) { h, r in try h.allDatabases(readableBy: r.principal) }),
        Route(["_uuids"], .get(.signedIn) { h, r in try h.uuids(r.request) }),
        // What it may reach is checked against the source and target it names.
        Route(["_replicate"], .post(.signedIn, writes: false) { h, r in try await h.replicate(r) }),
        Route(["_active_tasks"], .get(.serverAdmin) { h, _ in h.activeTasks() }),
        Route(["_scheduler", "jobs"], .get(.serverAdmin) { h, _ in h.schedulerJobs() }),
    ]

    /// `/_node/...`: what a node tells its administrators beyond CouchDB's API.
    private static let node: [Route] = [
        Route(["_node", "redeem"], .post(.open, writes: false) { h, r in try await h.redemption.redeem(r.request, context: r.context) }),
        Route(["_node", "keyspaces"], .get(.signedIn) { h, r in try h.offeredKeyspaces(to: r.principal) }),
        Route(["_node", "info"], .get(.serverAdmin) { h, _ in h.info() }),
        Route(["_node", "qr.svg"], .get(.serverAdmin) { h, _ in try h.pairingQRCode() }),
        Route(["_node", "peers"], .get(.serverAdmin) { h, _ in HTTP.json(try h.peerConsole().peers) }),
        Route(["_node", "sync-status"], .get(.serverAdmin) { h, _ in try h.syncStatus() }),
        Route(["_node", "events"], .get(.serverAdmin) { h, _ in h.events() }),
        Route(["_node", "pair"], .post(.serverAdmin) { h, r in try await h.pair(r.request) }),
        Route(["_node", "invitations"],
              .get(.serverAdmin) { h, _ in try h.invitations() },
              .post(.serverAdmin) { h, r in try await h.invite(r.request) }),
        Route(["_node", "invitations", .any(.invitation)], .delete(.serverAdmin) { h, r in try await h.revokeInvitation(id: r(.invitation)) }),
        Route(["_node", "trust", .any(.fingerprint)],
              .put(.serverAdmin) { h, r in try await h.trust(fingerprint: r(.fingerprint)) },
              .delete(.serverAdmin) { h, r in try await h.untrust(fingerprint: r(.fingerprint)) }),
        Route(["_node", "databases"], .get(.serverAdmin) { h, _ in HTTP.json(try h.databasesJSON()) }),
        Route(["_node", "conflicts", .keyspace], .get(.serverAdmin) { h, r in HTTP.json(try h.conflicts(in: h.collection(r.keyspace))) }),
        Route(["_node", "conflicts", .keyspace, .any(.document)],
              .post(.serverAdmin) { h, r in try await h.resolve(r.request, collection: h.collection(r.keyspace), id: r(.document)) }),
        Route(["_node", "_local", "_prometheus"], .get(.serverAdmin) { h, _ in h.prometheus() }),
        Route(["_node", "replications", "recent"], .get(.serverAdmin) { h, _ in HTTP.json(.array(h.replications.tasks.recent.map(\.json))) }),
    ]

    /// `/{db}/...`: databases, their endpoints and documents.
    private static let database: [Route] = [
        Route([.keyspace],
              .get(.reader) { h, r in try h.databaseInfo(r.keyspace) },
              .put(.serverAdmin) { h, r in try h.createDatabase(r.keyspace) },
              .delete(.serverAdmin) { h, r in try h.deleteDatabase(r.keyspace) },
              .post(.writer) { h, r in try await h.postDocument(r) }),
        Route([.keyspace, "_all_docs"],
              .get(.reader) { h, r in try await h.allDocs(r.request, collection: h.collection(r.keyspace)) },
              .post(.reader, writes: false) { h, r in try await h.allDocs(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_changes"],
              .get(.reader) { h, r in try await h.changes(r.request, collection: h.collection(r.keyspace)) },
              .post(.reader, writes: false) { h, r in try await h.changes(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_revs_diff"], .post(.reader, writes: false) { h, r in try await h.revsDiff(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_digest"], .get(.reader) { h, r in try h.digest(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_bulk_docs"], .post(.writer) { h, r in try await h.bulkDocs(r.request, collection: h.collection(r.keyspace), author: r.author) }),
        Route([.keyspace, "_bulk_get"], .post(.reader, writes: false) { h, r in try await h.bulkGet(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_ensure_full_commit"], .post(.reader, writes: false) { h, r in
            _ = try h.collection(r.keyspace)
            return HTTP.json(["ok": true, "instance_start_time": "0"], status: .created)
        }),
        // A paired peer's `_query` reads only collections in its scope.
        Route([.keyspace, "_query"], .post(.reader, writes: false) { h, r in
            try await h.query(r.request, database: h.collection(r.keyspace).database, scope: r.principal.scope)
        }),
        Route([.keyspace, "_find"], .post(.reader, writes: false) { h, r in try await h.find(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_index"],
              .get(.reader) { h, r in try h.indexes(of: h.collection(r.keyspace)) },
              .post(.databaseAdmin) { h, r in try await h.createIndex(r.request, in: h.collection(r.keyspace)) }),
        // The design document named with or without its `_design/`.
        Route([.keyspace, "_index", .any(.designDocument), "json", .any(.index)],
              .delete(.databaseAdmin) { h, r in try h.deleteIndex(r(.index), in: h.collection(r.keyspace)) }),
        Route([.keyspace, "_index", "_design", .any(.designDocument), "json", .any(.index)],
              .delete(.databaseAdmin) { h, r in try h.deleteIndex(r(.index), in: h.collection(r.keyspace)) }),
        Route([.keyspace, "_compact"], .post(.databaseAdmin) { h, r in try h.compact(h.collection(r.keyspace)) }),
        Route([.keyspace, "_purge"], .post(.databaseAdmin) { h, r in try await h.purge(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_revs_limit"],
              .get(.reader) { h, r in HTTP.json("\(try h.collection(r.keyspace).database.revsLimit)") },
              .put(.databaseAdmin) { h, r in try await h.setRevsLimit(r.request, collection: h.collection(r.keyspace)) }),
        Route([.keyspace, "_security"],
              .get(.reader) { h, r in try h.security(of: r.keyspace) },
              .put(.databaseAdmin) { h, r in try await h.setSecurity(r.request, of: r.keyspace) }),
        // Replication checkpoints, kept on a read-only node too. A reader may write them: a peer
        // that only pulls says so how far it read, which the tombstone horizon counts on
        // (CheckpointHorizon). Each is stored with who wrote it.
        Route([.keyspace, "_local", .rest(.localID)],
              .get(.reader) { h, r in try h.localDocument(r(.localID), in: h.collection(r.keyspace)) },
              .put(.reader, writes: false) { h, r in
                  try await h.putLocalDocument(r(.localID), r.request, in: h.collection(r.keyspace), writer: await h.checkpointWriter(r))
              },
              .delete(.writer, writes: false) { h, r in try h.deleteLocalDocument(r(.localID), r.request, in: h.collection(r.keyspace)) }),
        Route([.keyspace, .name(.document)],
              .get(.reader) { h, r in try h.getDocument(r(.document), r.request, in: h.collection(r.keyspace)) },
              .put(.writer) { h, r in try await h.putDocument(r) },
              .delete(.writer) { h, r in try h.deleteDocument(r) }),
        Route([.keyspace, .name(.document), .rest(.attachment)],
              .get(.reader) { h, r in try h.getAttachment(r) },
              .put(.writer) { h, r in try await h.putAttachment(r) },
              .delete(.writer) { h, r in try h.deleteAttachment(r) }),
    ]
}
