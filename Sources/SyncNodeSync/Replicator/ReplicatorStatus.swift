import SyncNodeStore

/// What a replicator is doing (Couchbase Lite's activity levels).
public enum ReplicatorActivity: String, Sendable {
    /// Not running: never started, finished, stopped, or failed (see ``ReplicatorStatus/error``).
    case stopped
    /// The peer is unreachable; waiting before the next attempt.
    case offline
    /// Reaching the peer.
    case connecting
    /// Caught up; a continuous replicator waits for changes.
    case idle
    /// Moving changes.
    case busy
}

/// How far a replication has come: changes examined out of changes known.
public struct ReplicatorProgress: Sendable, Equatable {
    /// Changes examined so far in this pass.
    public var completed = 0
    /// Changes known to examine in this pass (grows as the feed reveals more).
    public var total = 0

    /// `completed` of `total`.
    public init(completed: Int = 0, total: Int = 0) {
        self.completed = completed
        self.total = total
    }
}

/// A replicator's state at one moment.
public struct ReplicatorStatus: Sendable {
    /// What the replicator is doing now.
    public var activity: ReplicatorActivity = .stopped
    /// The current pass's progress.
    public var progress = ReplicatorProgress()
    /// Revisions written to each side so far.
    public var result = ReplicationResult()
    /// Why it stopped or is retrying; the peer's HTTP status is kept in a ``CouchError``.
    public var error: (any Error)?
    /// The source sequence the last saved checkpoint records (of the direction that saved last).
    public var lastCheckpoint: String?
}

/// How many changes a replication has yet to examine each way (see ``Replicator/pendingChanges()``).
public struct PendingChanges: Sendable, Equatable {
    /// Local changes after the push checkpoint; nil when it does not push.
    public var push: Int?
    /// The peer's changes after the pull checkpoint; nil when it does not pull.
    public var pull: Int?

    /// Counts each way (nil: that way is not replicated).
    public init(push: Int? = nil, pull: Int? = nil) {
        self.push = push
        self.pull = pull
    }

    /// Nothing is left to examine either way.
    public var isZero: Bool { (push ?? 0) == 0 && (pull ?? 0) == 0 }
}

/// What a replication moved.
public struct ReplicationResult: Sendable, Equatable {
    /// Revisions written to the other side.
    public var pushed = 0
    /// Revisions written to this side.
    public var pulled = 0
    /// Documents the receiving side refused (a validator, a size limit, a missing attachment).
    public var failed = 0

    /// Counts of revisions written each way, and of refusals.
    public init(pushed: Int = 0, pulled: Int = 0, failed: Int = 0) {
        self.pushed = pushed
        self.pulled = pulled
        self.failed = failed
    }

    /// Adds `other`'s counts to these.
    mutating func add(_ other: ReplicationResult) {
        pushed += other.pushed
        pulled += other.pulled
        failed += other.failed
    }
}

/// A status change, as change listeners receive it.
public struct ReplicatorChange: Sendable {
    /// The replicator whose status changed.
    public let replicator: Replicator
    /// Its status after the change.
    public let status: ReplicatorStatus
}

/// One revision a replicator moved (or failed to).
public struct ReplicatedDocument: Sendable {
    /// The document's ID.
    public let id: String
    /// The revision that was sent or received.
    public let revisionID: String?
    /// Whether it is a deletion.
    public let flags: DocumentFlags
    /// Why the receiver refused it; nil when it was written.
    public let error: (any Error)?
}

/// A batch of documents moved in one direction, as document replication listeners receive it.
public struct DocumentReplication: Sendable {
    /// The replicator that moved the batch.
    public let replicator: Replicator
    /// Which way the batch went.
    public let direction: ReplicationDirection
    /// True for local revisions sent to the peer, false for the peer's received.
    public var isPush: Bool { direction == .push }
    /// The documents of the batch, each with its error when the receiver refused it.
    public let documents: [ReplicatedDocument]
}
