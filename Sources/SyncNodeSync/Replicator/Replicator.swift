import Crypto
import Dispatch
import Foundation
import Logging
import Synchronization
import SyncNodeStore

/// Replicates a collection with a peer over the CouchDB replication protocol.
///
/// Checkpoints are keyed by the peer's identity (its UUID when known), not
/// its address, so a peer that comes back elsewhere resumes where it left off.
///
/// ```swift
/// var config = ReplicatorConfiguration(collection: tasks, target: .url(pairingURL))
/// config.continuous = true
/// let replicator = Replicator(config: config)
/// let token = replicator.addChangeListener { change in print(change.status.activity) }
/// replicator.start()
/// ```
///
/// Or, from async code, one pass that returns when caught up:
/// `let moved = try await Replicator(config: config).runOnce()`.
public final class Replicator: Sendable {
    /// The configuration it was made with.
    public let config: ReplicatorConfiguration
    /// The configuration's filter, compiled once (see ``changeFilter(_:)``).
    private let filter: Swift.Result<ChangeFilter, any Error>
    let logger: Logger
    /// Guarded state (Replicator+Pending.swift reads the run's connection and sequences).
    let state = Mutex(State())
    private let changeListeners = ListenerRegistry<ReplicatorChange>(label: "syncnode.replicator.listener")
    private let documentListeners = ListenerRegistry<DocumentReplication>(label: "syncnode.replicator.documents")

    struct State {
        var status = ReplicatorStatus()
        var task: Task<Void, Never>?
        var run = 0
        var serverFingerprint: String?
        var remoteIdentity: String?
        /// The peer's 403 to a push-and-pull's push (it lets us read, not write): pulls go on, pushes wait for a restart.
        var pushRefusal: CouchError?
        /// The peer of the continuous run, while it is connected (``pendingChanges()`` asks it).
        var connected: (any ReplicationPeer)?
        /// The source sequences each direction has examined up to (its last checkpoint).
        var pushedUpTo: String?
        var pulledUpTo: String?
        /// The peer's digest root as its long poll's answer gave it, when the pass that answer
        /// started ended where the answer did (``syncCheck()`` uses it once); none while the
        /// next pass runs.
        var answeredRoot: AnsweredRoot?
    }

    /// A peer's digest root after the changes up to `lastSeq`, as its long poll answered it; `at`:
    /// when the pass it started ended.
    struct AnsweredRoot {
        var root: String
        var lastSeq: String
        var pending: Int?
        var at: ContinuousClock.Instant
    }

    /// A replicator for `config`; it connects to nothing until ``start(reset:)``, ``runOnce(reset:)`` or
    /// ``runContinuously(reset:)``.
    public init(config: ReplicatorConfiguration, logger: Logger = Logger(label: "syncnode.replicator")) {
        self.config = config
        self.logger = logger
        filter = Swift.Result { try ChangeFilter(config) }
    }

    /// Which changes this replication passes in `direction` (see
    /// ``ReplicatorConfiguration/filtersPushes``).
    /// - Throws: what ``ChangeFilter/init(_:)`` throws for the configuration: both `documentIDs`
    ///   and `selector`, or a selector that does not compile.
    func changeFilter(_ direction: ReplicationDirection) throws -> ChangeFilter {
        direction == .push && !config.filtersPushes ? .all : try filter.get()
    }

    // MARK: - Status

    /// What it is doing now, how far it has come, and the last error.
    public var status: ReplicatorStatus { state.withLock { $0.status } }

    /// The fingerprint of the certificate the peer presented and that is now
    /// pinned (with a pin configured, or after trust on first use).
    public var serverCertificateFingerprint: String? { state.withLock { $0.serverFingerprint } }

    /// Calls `listener` on each status change, in order, on `queue` (default: a serial queue of its own).
    public func addChangeListener(
        queue: DispatchQueue? = nil, _ listener: @escaping @Sendable (ReplicatorChange) -> Void
    ) -> ListenerToken {
        changeListeners.add(queue: queue, listener)
    }

    /// Calls `listener` after each batch of documents written to either side (or refused by it).
    public func addDocumentReplicationListener(
        queue: DispatchQueue? = nil, _ listener: @escaping @Sendable (DocumentReplication) -> Void
    ) -> ListenerToken {
        documentListeners.add(queue: queue, listener)
    }

    /// Status changes as an async sequence (ends when the consuming task is cancelled).
    public func statusChanges() -> AsyncStream<ReplicatorChange> { changeListeners.stream() }

    /// Replicated document batches as an async sequence.
    public func documentReplications() -> AsyncStream<DocumentReplication> { documentListeners.stream() }

    func update(_ change: (inout ReplicatorStatus) -> Void) {
        state.withLock { s in
            change(&s.status)
            // Emitted under the lock so every listener sees changes in order.
            changeListeners.emit(ReplicatorChange(replicator: self, status: s.status))
        }
    }

    /// Reports a batch to document listeners; the batch is only built when someone listens.
    func report(_ direction: ReplicationDirection, _ documents: () -> [ReplicatedDocument]) {
        guard !documentListeners.isEmpty else { return }
        let batch = documents()
        guard !batch.isEmpty else { return }
        documentListeners.emit(DocumentReplication(replicator: self, direction: direction, documents: batch))
    }

    // MARK: - Running

    /// Starts replicating in the background: one pass, or (``ReplicatorConfiguration/continuous``)
    /// until ``stop()``. Does nothing if it is running. `reset` ignores the
    /// checkpoints and examines every change again (nothing present is re-sent).
    public func start(reset: Bool = false) {
        state.withLock { s in
            guard s.task == nil else { return }
            s.run += 1
            let run = s.run
            s.status.error = nil
            s.pushRefusal = nil
            s.task = Task { [self] in
                do {
                    if config.continuous {
                        try await runContinuously(reset: reset)
                    } else {
                        _ = try await runOnce(reset: reset)
                    }
                } catch {
                    // runOnce/runContinuously recorded it.
                }
                state.withLock { if $0.run == run { $0.task = nil } }
            }
        }
    }

    /// Stops a started replication; ``status`` turns `stopped` once it has.
    public func stop() {
        state.withLock { $0.task }?.cancel()
    }

    /// Waits until a started replication has finished or stopped.
    public func waitUntilStopped() async {
        await state.withLock { $0.task }?.value
    }

    /// One replication pass in the configured direction(s), until caught up.
    /// Transient failures (connection errors, timeouts, 408, 429, 5xx) are retried with
    /// exponential backoff, up to `maxAttempts` times and for at most `maxRetryDuration`
    /// per request; 401/403 and pin failures stop at once.
    /// The error thrown is also left in ``status``.
    /// - Throws: ``CouchError`` for the peer's refusal (4xx other than 408/429), or its last transient error
    ///   once `maxAttempts` are spent; ``SyncError/invalidIdentity(_:)`` for a certificate that does not match
    ///   the pin or fails the TLS handshake; ``SyncError/invalidConfiguration(_:)`` for a URL that is not
    ///   `http(s)://host[:port]/db`; ``SyncError/connectionFailed(_:)`` or the HTTP client's error when the
    ///   peer cannot be reached; `StoreError` when the local store fails; `CancellationError` when the
    ///   task is cancelled.
    @discardableResult
    public func runOnce(reset: Bool = false) async throws -> ReplicationResult {
        do {
            update { $0.activity = .connecting }
            let result = try await withPeer(retryingConnection: true) { remote in
                let remoteID = try await withRetries { try await self.identity(of: remote) }
                return try await pass(remote: remote, remoteID: remoteID, reset: reset).result
            }
            let refusal = state.withLock { $0.pushRefusal }
            update {
                $0.activity = .stopped
                $0.error = refusal
            }
            return result
        } catch {
            update {
                $0.activity = .stopped
                if !(error is CancellationError) { $0.error = error }
            }
            throw error
        }
    }

    /// Replicates until the task is cancelled: a pass, then waiting for the
    /// next local change (push) or remote change (pull, by long poll), then
    /// another pass. Transient failures are retried forever with backoff;
    /// 401/403 and a wrong pin stop it. Once it has stopped, ``status`` keeps
    /// only an error that stopped it, not a failure it was retrying.
    /// - Throws: the errors no retry can fix: ``CouchError`` for a 4xx other than 408/429,
    ///   ``SyncError`` (other than ``SyncError/connectionFailed(_:)``), `StoreError`; `CancellationError`
    ///   when the task is cancelled during a backoff wait (cancelled elsewhere, it returns normally).
    public func runContinuously(reset: Bool = false) async throws {
        let signal = ChangeSignal()
        let token = config.collection.addChangeListener { _ in signal.fire() }
        defer { token.remove() }
        var backoff = Backoff(config.retryPolicy)
        var reset = reset
        defer {
            update {
                $0.activity = .stopped
                // Stopped on request: a failure it was retrying is no longer why it is not running.
                if let error = $0.error, !Self.isPermanent(error) { $0.error = nil }
            }
        }
        while !Task.isCancelled {
            do {
                update { $0.activity = .connecting }
                try await withPeer { remote in
                    state.withLock { $0.connected = remote }
                    defer { state.withLock { $0.connected = nil } }
                    let remoteID = try await identity(of: remote)
                    var prefetched: (since: String, changes: PeerChanges)?
                    var carried: [ReplicationDirection: Checkpointer] = [:]
                    var checkpointsRead = ContinuousClock.now
                    while !Task.isCancelled {
                        // Both sides' checkpoints are read again once a heartbeat, not every pass:
                        // a peer database deleted and made again under the same name is still noticed.
                        if checkpointsRead.duration(to: .now) >= longPollTimeout { carried = [:] }
                        if carried.isEmpty { checkpointsRead = .now }
                        let outcome = try await pass(remote: remote, remoteID: remoteID, reset: reset, prefetched: prefetched, carried: carried)
                        let remoteSince = outcome.remoteSince
                        carried = outcome.checkpointers
                        reset = false
                        backoff.reset()
                        let refusal = state.withLock { $0.pushRefusal }
                        update {
                            $0.activity = .idle
                            $0.error = refusal
                        }
                        // Caught up: other pulls into this collection name this peer while it waits.
                        let answer = try await LivePulls.shared.waiting(on: remoteID, into: config.collection, counted: config.replicatorType != .push) {
                            try await waitForWork(remote: remote, remoteID: remoteID, remoteSince: remoteSince, localSignal: signal)
                        }
                        prefetched = if let remoteSince, let answer { (remoteSince, answer) } else { nil }
                    }
                }
            } catch is CancellationError {
                return
            } catch where Self.isPermanent(error) {
                update { $0.error = error }
                throw error
            } catch {
                let wait = backoff.next()
                logger.notice("replication interrupted; retrying", metadata: ["error": "\(error)", "in": "\(wait)"])
                update {
                    $0.activity = .offline
                    $0.error = error
                }
                try await Task.sleep(for: wait)
            }
        }
    }

    /// Runs `body` with the peer, then shuts its HTTP client down, also when `body` throws:
    /// the connections end with the run, not later in a task nobody waits for.
    /// `retryingConnection`: a peer that cannot be reached yet (its pinned certificate is read
    /// before anything else) is tried up to `maxAttempts` times, as every later request is.
    func withPeer<T: Sendable>(retryingConnection: Bool = false, _ body: (any ReplicationPeer) async throws -> T) async throws -> T {
        let (remote, http) = retryingConnection ? try await withRetries { try await self.connect() } : try await connect()
        do {
            let result = try await body(remote)
            await http?.shutdown()
            return result
        } catch {
            await http?.shutdown()
            throw error
        }
    }

    private func connect() async throws -> (any ReplicationPeer, HTTPRemote?) {
        switch config.target {
        case .url(let url):
            let trusted = state.withLock { $0.serverFingerprint }
            let (connected, pinned) = try await HTTPRemote.connect(config, url: url, trusted: trusted)
            if let pinned { state.withLock { $0.serverFingerprint = pinned } }
            if config.createTarget {
                do { try await connected.createDatabase() } catch {
                    await connected.shutdown()
                    throw error
                }
            }
            return (connected, connected)
        case .collection(let other):
            let author = config.localAuthor ?? WriteAuthor(origin: .replication(peer: "\(config.collection.database.uuid)/\(config.collection.fullName)"))
            return (LocalDatabase(collection: other, author: author), nil)
        }
    }

    /// The remote as checkpoints name it, `<server uuid>/<database>`, once a pass has reached
    /// it; nil before. The members of a CouchDB cluster share one.
    public var remoteIdentity: String? { state.withLock { $0.remoteIdentity } }

    func identity(of remote: any ReplicationPeer) async throws -> String {
        let id = try await remote.identity()
        state.withLock { $0.remoteIdentity = id }
        return id
    }

    /// One pass in the configured direction(s); also returns where the remote's feed ended.
    /// `carried`: the last pass's checkpointers, which go on where it stopped instead of reading
    /// both sides' checkpoints again (in a mesh, a request per peer per write); the pass returns
    /// its own. `prefetched`: the remote's changes after where the last pass ended, as the long
    /// poll that woke this one brought them; a pull that starts there (from the last pass's
    /// checkpointer, or from checkpoints that say the same) takes them instead of asking again,
    /// and when the pull ends where they do, their digest root stands in for asking the peer's
    /// (``syncCheck()``).
    private func pass(
        remote: any ReplicationPeer, remoteID: String, reset: Bool, prefetched: (since: String, changes: PeerChanges)? = nil,
        carried: [ReplicationDirection: Checkpointer] = [:]
    ) async throws -> (result: ReplicationResult, remoteSince: String?, checkpointers: [ReplicationDirection: Checkpointer]) {
        update {
            $0.activity = .busy
            $0.progress = ReplicatorProgress()
        }
        // The last answer's root says nothing of what woke this pass: a sync check made while
        // it runs (the peer wrote, this side has not yet) would take it for in sync.
        state.withLock { $0.answeredRoot = nil }
        let local = LocalDatabase(collection: config.collection, author: config.localAuthor ?? WriteAuthor(origin: .replication(peer: remoteID)))
        var result = ReplicationResult()
        var remoteSince: String?
        var checkpointers: [ReplicationDirection: Checkpointer] = [:]
        if config.replicatorType != .push {
            let run = ReplicationRun(replicator: self, source: remote, target: local, direction: .pull,
                                     id: try replicationID(remoteID: remoteID, direction: .pull), remoteID: remoteID, reset: reset,
                                     firstPage: prefetched, resuming: reset ? nil : carried[.pull])
            let pulled = try await run.run()
            (result.pulled, remoteSince, checkpointers[.pull]) = (pulled.written, pulled.since, pulled.checkpointer)
            state.withLock { s in
                s.answeredRoot = prefetched.flatMap { (_, page) in
                    page.digestRoot.flatMap { page.lastSeq == pulled.since ? AnsweredRoot(root: $0, lastSeq: page.lastSeq, pending: page.pending, at: .now) : nil }
                }
            }
        }
        if config.replicatorType != .pull, state.withLock({ $0.pushRefusal == nil }) {
            let run = ReplicationRun(replicator: self, source: local, target: remote, direction: .push,
                                     id: try replicationID(remoteID: remoteID, direction: .push), remoteID: remoteID, reset: reset,
                                     resuming: reset ? nil : carried[.push])
            do {
                let pushed = try await run.run()
                (result.pushed, checkpointers[.push]) = (pushed.written, pushed.checkpointer)
            } catch let refusal as CouchError where refusal.status == 403 && config.replicatorType == .pushAndPull {
                // A peer may let us read and not write (a reader in its _security): pulling goes on.
                logger.warning("the peer refuses our writes; pulling only", metadata: ["reason": "\(refusal.reason)"])
                state.withLock { $0.pushRefusal = refusal }
            }
        }
        return (result, remoteSince, checkpointers)
    }

    /// Returns when there may be something to replicate: a local change (when
    /// pushing) or a remote one (when pulling, by long poll, with the answer's page of them,
    /// empty when it timed out), or after a heartbeat (``ReplicatorConfiguration/heartbeat``).
    private func waitForWork(remote: any ReplicationPeer, remoteID: String, remoteSince: String?, localSignal: ChangeSignal) async throws -> PeerChanges? {
        let pushing = config.replicatorType != .pull && state.withLock { $0.pushRefusal == nil }
        let filter = try changeFilter(.pull)
        let heartbeat = longPollTimeout
        let limit = config.batchSize
        return try await withThrowingTaskGroup(of: PeerChanges?.self) { group in
            if pushing {
                group.addTask {
                    _ = await localSignal.wait(timeout: heartbeat + .seconds(5))
                    return nil
                }
            }
            if let remoteSince {
                let sources = LivePulls.shared.sources(of: config.collection, except: remoteID)
                group.addTask { try await remote.waitForChanges(since: remoteSince, limit: limit, timeout: heartbeat, filter: filter, liveSources: sources) }
            }
            group.addTask {
                try await Task.sleep(for: heartbeat + .seconds(5))
                return nil
            }
            let first = try await group.next()
            group.cancelAll()
            return first ?? nil
        }
    }

    /// How long a long poll waits: it must answer before the read timeout gives up on a silent peer.
    private var longPollTimeout: Duration { max(.seconds(1), min(config.heartbeat, config.readTimeout - .seconds(5))) }

    /// The replication ID: SHA-1 over the local database UUID, the remote
    /// identity, the direction and the filter (``ChangeFilter/identityParts``).
    func replicationID(remoteID: String, direction: ReplicationDirection) throws -> String {
        Self.hexDigest([config.collection.database.uuid, config.collection.fullName, remoteID, direction.rawValue]
                       + (try changeFilter(direction)).identityParts)
    }

    /// Hex SHA-1 of `parts` joined by NUL: the shape of replication IDs.
    static func hexDigest(_ parts: [String]) -> String {
        Insecure.SHA1.hash(data: Data(parts.joined(separator: "\u{0}").utf8)).map { String(format: "%02x", $0) }.joined()
    }

    /// Whether a started replication is still running (its task has not ended).
    var isRunning: Bool { state.withLock { $0.task != nil } }

    // MARK: - Retries

    /// Errors no retry can fix: the peer refused us (4xx other than 408/429),
    /// a wrong pin or configuration, or the local store failing.
    static func isPermanent(_ error: any Error) -> Bool {
        switch error {
        case let error as CouchError: return !PeerStatus.isRetryable(error.status)
        case SyncError.connectionFailed: return false
        case is SyncError, is StoreError, is CancellationError: return true
        default: return false
        }
    }

    /// Retries transient failures with exponential backoff, showing `offline` while waiting.
    func withRetries<T: Sendable>(_ operation: @Sendable () async throws -> T) async throws -> T {
        var attempt = 1
        var backoff = Backoff(config.retryPolicy)
        let started = ContinuousClock.now
        while true {
            do {
                return try await operation()
            } catch where Self.isPermanent(error) || attempt >= config.maxAttempts || started.duration(to: .now) >= config.maxRetryDuration {
                throw error
            } catch {
                logger.notice("transient replication error; retrying", metadata: ["attempt": "\(attempt)", "error": "\(error)"])
                update {
                    $0.activity = .offline
                    $0.error = error
                }
                try await Task.sleep(for: backoff.next())
                update { $0.activity = .busy }
                attempt += 1
            }
        }
    }
}
