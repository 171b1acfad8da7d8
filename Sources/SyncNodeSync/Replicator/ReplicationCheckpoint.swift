import SyncNodeStore

/// Where a replication in one direction got to, as both ends keep it in
/// `_local/<replication ID>`: CouchDB's shape (`session_id`,
/// `source_last_seq`, and a `history` of sessions with their `recorded_seq`),
/// plus the `last_seq`, `replicator` and `version` members PouchDB-style peers
/// require.
struct ReplicationCheckpoint: Sendable, Equatable {
    struct Session: Sendable, Equatable {
        let id: String
        let recordedSequence: String
    }

    /// The run that wrote it.
    var session: String
    /// The source sequence everything up to which is on the target.
    var sourceLastSequence: String
    /// Recent sessions, newest first (at most 20).
    var history: [Session]

    init(session: String, sourceLastSequence: String, history: [Session] = []) {
        self.session = session
        self.sourceLastSequence = sourceLastSequence
        self.history = history
    }

    /// Reads a checkpoint written by us, CouchDB or PouchDB; sequences may be numbers or strings.
    init(json: [String: DocumentValue]) {
        session = json["session_id"]?.stringValue ?? ""
        sourceLastSequence = WireURL.sequenceText(json["source_last_seq"] ?? json["last_seq"])
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
        [
            "session_id": .string(session), "source_last_seq": .string(sourceLastSequence),
            "history": .array(history.map { ["session_id": .string($0.id), "recorded_seq": .string($0.recordedSequence)] }),
            "last_seq": .string(sourceLastSequence), "replicator": "syncnode", "version": 1,
        ]
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
