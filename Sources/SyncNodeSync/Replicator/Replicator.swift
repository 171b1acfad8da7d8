import Crypto
import Foundation
import Logging
import SyncNodeStore

/// What a replication moved.
public struct ReplicationResult: Sendable, Equatable {
    /// Revisions written to the other side.
    public var pushed = 0
    /// Revisions written to this side.
    public var pulled = 0

    public init(pushed: Int = 0, pulled: Int = 0) {
        self.pushed = pushed
        self.pulled = pulled
    }
}

/// Replicates a collection with a peer over the CouchDB replication protocol.
///
/// Checkpoints are keyed by the peer's identity (its UUID when known), not
/// its address, so a peer that comes back elsewhere resumes where it left off.
///
/// ```swift
/// var config = ReplicatorConfiguration(collection: tasks, target: .url(pairingURL))
/// config.replicatorType = .pull
/// let result = try await Replicator(config: config).runOnce()
/// ```
public final class Replicator: Sendable {
    public let config: ReplicatorConfiguration
    let logger: Logger

    public init(config: ReplicatorConfiguration, logger: Logger = Logger(label: "syncnode.replicator")) {
        self.config = config
        self.logger = logger
    }

    /// One replication pass in the configured direction(s), until caught up.
    /// Transient failures (connection errors, 408, 429, 5xx) are retried with
    /// exponential backoff up to `maxAttempts`; 401/403 and pin failures stop at once.
    public func runOnce(progress: (@Sendable (ReplicationResult) -> Void)? = nil) async throws -> ReplicationResult {
        let (remote, http) = try await connect()
        defer { if let http { Task { await http.shutdown() } } }
        let remoteID = try await withRetries { try await remote.identity() }
        return try await pass(remote: remote, remoteID: remoteID, progress: progress).result
    }

    /// Replicates until the task is cancelled: a pass, then waiting for the
    /// next local change (push) or remote change (pull, by long poll), then
    /// another pass. Transient failures are retried forever with backoff;
    /// 401/403 and a wrong pin stop it.
    public func runContinuously(progress: (@Sendable (ReplicationResult) -> Void)? = nil) async throws {
        let local = config.collection
        let signal = ChangeSignal()
        let token = local.addChangeListener { _ in signal.fire() }
        defer { token.remove() }
        var total = ReplicationResult()
        var delay = Duration.milliseconds(200)
        while !Task.isCancelled {
            do {
                let (remote, http) = try await connect()
                defer { if let http { Task { await http.shutdown() } } }
                let remoteID = try await remote.identity()
                while !Task.isCancelled {
                    let (result, remoteSince) = try await pass(remote: remote, remoteID: remoteID, progress: nil)
                    total.pushed += result.pushed
                    total.pulled += result.pulled
                    progress?(total)
                    delay = .milliseconds(200)
                    try await waitForWork(remote: remote, remoteSince: remoteSince, localSignal: signal)
                }
            } catch is CancellationError {
                return
            } catch let error as CouchError where ![408, 429].contains(error.status) && error.status < 500 {
                throw error
            } catch let error as SyncError {
                throw error
            } catch {
                logger.notice("replication interrupted; retrying", metadata: ["error": "\(error)", "in": "\(delay)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, config.maxAttemptWaitTime)
            }
        }
    }

    private func connect() async throws -> (any ReplicationPeer, HTTPRemote?) {
        switch config.target {
        case .url(let url):
            let connected = try await HTTPRemote.connect(config, url: url)
            return (connected, connected)
        case .collection(let other):
            return (LocalDatabase(collection: other), nil)
        }
    }

    /// One pass in the configured direction(s); also returns where the remote's feed ended.
    private func pass(
        remote: any ReplicationPeer, remoteID: String, progress: (@Sendable (ReplicationResult) -> Void)?
    ) async throws -> (result: ReplicationResult, remoteSince: String?) {
        let local = LocalDatabase(collection: config.collection)
        var result = ReplicationResult()
        var remoteSince: String?
        if config.replicatorType != .push {
            (result.pulled, remoteSince) = try await replicate(from: remote, to: local, direction: "pull", remoteID: remoteID) { n in
                progress?(ReplicationResult(pushed: 0, pulled: n))
            }
        }
        if config.replicatorType != .pull {
            result.pushed = try await replicate(from: local, to: remote, direction: "push", remoteID: remoteID) { [result] n in
                progress?(ReplicationResult(pushed: n, pulled: result.pulled))
            }.written
        }
        return (result, remoteSince)
    }

    /// Returns when there may be something to replicate: a local change (when
    /// pushing) or a remote one (when pulling, by long poll), or after a minute.
    private func waitForWork(remote: any ReplicationPeer, remoteSince: String?, localSignal: ChangeSignal) async throws {
        let pushing = config.replicatorType != .pull
        let documentIDs = config.documentIDs
        try await withThrowingTaskGroup(of: Void.self) { group in
            if pushing {
                group.addTask { _ = await localSignal.wait(timeout: .seconds(60)) }
            }
            if let remoteSince {
                group.addTask { try await remote.waitForChanges(since: remoteSince, timeout: .seconds(55), documentIDs: documentIDs) }
            }
            group.addTask { try await Task.sleep(for: .seconds(60)) }
            try await group.next()
            group.cancelAll()
        }
    }

    /// The replication ID: SHA-1 over the local database UUID, the remote
    /// identity, the direction and the document filter (DESIGN.md §4).
    func replicationID(remoteID: String, direction: String) -> String {
        let parts = [config.collection.database.uuid, config.collection.fullName, remoteID, direction,
                     (config.documentIDs ?? []).sorted().joined(separator: ",")]
        let digest = Insecure.SHA1.hash(data: Data(parts.joined(separator: "\u{0}").utf8))
        return digest.map { String(format: "%02x", $0) }.joined()
    }

    private func replicate(
        from source: any ReplicationPeer, to target: any ReplicationPeer, direction: String, remoteID: String,
        progress: @Sendable (Int) -> Void
    ) async throws -> (written: Int, since: String) {
        let id = replicationID(remoteID: remoteID, direction: direction)
        let sourceCheckpoint = try await withRetries { try await source.checkpoint(id) }
        let targetCheckpoint = try await withRetries { try await target.checkpoint(id) }
        var since = Self.agreedSequence(sourceCheckpoint, targetCheckpoint)
        let session = UUID().uuidString.lowercased()
        var history = Self.history(sourceCheckpoint)
        var written = 0
        logger.debug("replicating", metadata: ["direction": "\(direction)", "since": "\(since)"])
        while true {
            let from = since
            let (rows, lastSeq) = try await withRetries {
                try await source.changes(since: from, limit: self.config.batchSize, documentIDs: self.config.documentIDs)
            }
            if rows.isEmpty { break }
            var asked: [String: [String]] = [:]
            for row in rows { asked[row.id, default: []].append(contentsOf: row.revs) }
            let question = asked
            let missing = try await withRetries { try await target.revsDiff(question) }
            if !missing.isEmpty {
                let wanted = missing.map { (id: $0.key, revs: $0.value) }
                let docs = try await withRetries { try await source.fetch(wanted) }
                let refused = try await withRetries { try await target.store(docs) }
                for (id, reason) in refused {
                    logger.warning("a document was not replicated", metadata: ["id": "\(id)", "reason": "\(reason)", "direction": "\(direction)"])
                }
                written += docs.count - refused.count
                progress(written)
            }
            since = lastSeq
            // One entry per session (CouchDB's shape): its latest recorded sequence.
            history.removeAll { $0["session_id"] == .string(session) }
            history.insert(["session_id": .string(session), "recorded_seq": .string(since)], at: 0)
            history = Array(history.prefix(20))
            let checkpoint: [String: DocumentValue] = [
                "session_id": .string(session), "source_last_seq": .string(since), "history": .array(history.map { .dictionary($0) }),
            ]
            try await withRetries { try await target.saveCheckpoint(id, checkpoint) }
            try await withRetries { try await source.saveCheckpoint(id, checkpoint) }
        }
        return (written, since)
    }

    /// The sequence both checkpoints agree on: the same last sequence, else the
    /// newest session they share, else the start.
    static func agreedSequence(_ a: [String: DocumentValue]?, _ b: [String: DocumentValue]?) -> String {
        guard let a, let b else { return "0" }
        if let seq = a["source_last_seq"], seq == b["source_last_seq"] { return HTTPRemote.sequenceText(seq) }
        let sessionsB = Dictionary(history(b).compactMap { entry -> (String, DocumentValue)? in
            guard case .string(let s)? = entry["session_id"], let seq = entry["recorded_seq"] else { return nil }
            return (s, seq)
        }, uniquingKeysWith: { first, _ in first })
        for entry in history(a) {
            if case .string(let s)? = entry["session_id"], let seq = entry["recorded_seq"], sessionsB[s] == seq {
                return HTTPRemote.sequenceText(seq)
            }
        }
        return "0"
    }

    static func history(_ checkpoint: [String: DocumentValue]?) -> [[String: DocumentValue]] {
        guard case .array(let entries)? = checkpoint?["history"] else { return [] }
        return entries.compactMap { if case .dictionary(let d) = $0 { return d } else { return nil } }
    }

    /// Retries transient failures with exponential backoff.
    private func withRetries<T: Sendable>(_ operation: @Sendable () async throws -> T) async throws -> T {
        var attempt = 1
        var delay = Duration.milliseconds(200)
        while true {
            do {
                return try await operation()
            } catch let error as CouchError where ![408, 429].contains(error.status) && error.status < 500 {
                throw error
            } catch let error as SyncError {
                throw error
            } catch let error as StoreError {
                throw error
            } catch {
                guard attempt < config.maxAttempts else { throw error }
                logger.notice("transient replication error; retrying", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                try await Task.sleep(for: delay)
                delay = min(delay * 2, config.maxAttemptWaitTime)
                attempt += 1
            }
        }
    }
}
