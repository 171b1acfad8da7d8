import SyncNodeStore

/// Where a replication in one direction got to, as both ends keep it in
/// `_local/<replication ID>`: CouchDB's shape (`session_id`,
/// `source_last_seq`, and a `history` of sessions with their `recorded_seq`),
/// plus the `last_seq`, `replicator` and `version` members PouchDB-style peers
/// require. Ours also say who wrote them (``Origin``), for the source's tombstone horizon.
struct ReplicationCheckpoint: Sendable, Equatable {
    struct Session: Sendable, Equatable {
        let id: String
        let recordedSequence: String
    }

    /// The replicator that wrote a checkpoint: with it, the source can tell that a peer has
    /// read its changes up to `source_last_seq` (``CheckpointHorizon``).
    struct Origin: Sendable, Equatable {
        /// The writing replicator's direction (`pull`: it read the other side's feed).
        let direction: ReplicationDirection
        /// The writer's remote, `<node uuid>/<database>`.
        let remote: String
        /// The writer's own keyspace, the one it replicates with the remote.
        let local: String
        /// Whether a filter skipped changes: such a checkpoint says nothing of the rest.
        let filtered: Bool

        init(direction: ReplicationDirection, remote: String, local: String, filtered: Bool) {
            (self.direction, self.remote, self.local, self.filtered) = (direction, remote, local, filtered)
        }

        init?(json: DocumentValue?) {
            guard case .dictionary(let d)? = json, let direction = d["direction"]?.stringValue.flatMap(ReplicationDirection.init(rawValue:)),
                  let remote = d["remote"]?.stringValue, let local = d["local"]?.stringValue else { return nil }
            self.init(direction: direction, remote: remote, local: local, filtered: d["filtered"] != .bool(false))
        }

        var json: DocumentValue {
            ["direction": .string(direction.rawValue), "remote": .string(remote), "local": .string(local), "filtered": .bool(filtered)]
        }
    }

    /// The run that wrote it.
    var session: String
    /// The source sequence everything up to which is on the target.
    var sourceLastSequence: String
    /// Recent sessions, newest first (at most 20).
    var history: [Session]
    /// Who wrote it; nil for another replicator's.
    var origin: Origin?

    init(session: String, sourceLastSequence: String, history: [Session] = [], origin: Origin? = nil) {
        self.session = session
        self.sourceLastSequence = sourceLastSequence
        self.history = history
        self.origin = origin
    }

    /// Reads a checkpoint written by us, CouchDB or PouchDB; sequences may be numbers or strings.
    init(json: [String: DocumentValue]) {
        session = json["session_id"]?.stringValue ?? ""
        sourceLastSequence = WireURL.sequenceText(json["source_last_seq"] ?? json["last_seq"])
        origin = Origin(json: json["syncnode_origin"])
        guard case .array(let entries)? = json["history"] else {
            history = []
            return
        }
        history = entries.compactMap { entry in
            guard case .dictionary(let d) = entry, case .string(let id)? = d["session_id"],
                  let seq = d["recorded_seq"] ?? d["last_seq"] else { return nil }
            return Session(id: id, recordedSequence: WireURL.sequenceText(seq))
        }
    }

    var json: [String: DocumentValue] {
        var json: [String: DocumentValue] = [
            "session_id": .string(session), "source_last_seq": .string(sourceLastSequence),
            "history": .array(history.map { ["session_id": .string($0.id), "recorded_seq": .string($0.recordedSequence)] }),
            "last_seq": .string(sourceLastSequence), "replicator": "syncnode", "version": 1,
        ]
        json["syncnode_origin"] = origin?.json
        return json
    }

    /// A checkpoint of the same session that vouches for nothing: resuming from it starts over.
    var startingOver: ReplicationCheckpoint {
        ReplicationCheckpoint(session: session, sourceLastSequence: "0", origin: origin)
    }

    /// This checkpoint after `session` reached `sequence`: one history entry per session.
    func recording(_ sequence: String) -> ReplicationCheckpoint {
        var next = self
        next.sourceLastSequence = sequence
        next.history.removeAll { $0.id == session }
        next.history.insert(Session(id: session, recordedSequence: sequence), at: 0)
        next.history = Array(next.history.prefix(20))
        return next
    }

    /// The sequence both ends agree on: the same last sequence, else the
    /// source's sequence for the newest session both recorded, else the start.
    /// The target's checkpoint is written first, so after a crash between the
    /// two writes the source's is the older one: at most one batch is examined again.
    static func agreedSequence(source: ReplicationCheckpoint?, target: ReplicationCheckpoint?) -> String {
        guard let source, let target else { return "0" }
        if source.sourceLastSequence == target.sourceLastSequence { return source.sourceLastSequence }
        let targetSessions = Set(target.history.map(\.id))
        return source.history.first { targetSessions.contains($0.id) }?.recordedSequence ?? "0"
    }
}
