import Foundation
import ServiceLifecycle
import SyncNodeStore

/// A long poll's wait: until its feed has something to answer, its timeout passes or the
/// listener stops.
///
/// It sleeps until its signal fires (a change, a change of access, a graceful stop) and only
/// then looks at the feed: a mesh node serves a long poll to each of its peers, and looking
/// once a second cost an idle node a read and a wakeup per peer each second.
struct LongPollWait {
    private let handlers: Handlers
    private let collection: DocumentCollection
    private let spec: Handlers.ChangesRequest
    private let signal: ChangeSignal
    private let revocation: FeedRevocation
    private let deadline: ContinuousClock.Instant
    /// How far the wait has looked: a selector's wait tests each change once.
    private var looked: Int64
    private var lastBeat = ContinuousClock.now
    /// Whether the feed may have something since the last look: a change fired the signal.
    private var mayHaveChanged = true

    init(handlers: Handlers, collection: DocumentCollection, spec: Handlers.ChangesRequest, signal: ChangeSignal, revocation: FeedRevocation) {
        self.handlers = handlers
        self.collection = collection
        self.spec = spec
        self.signal = signal
        self.revocation = revocation
        let asked = Duration.milliseconds(spec.timeout ?? 60_000)
        deadline = ContinuousClock.now.advanced(by: handlers.environment.faultInjector?.longPollLimit.map { min($0, asked) } ?? asked)
        looked = spec.since
    }

    /// Waits; true when `heartbeat` passed first (the caller sends one and waits again), false
    /// when the wait is over.
    ///
    /// - Throws: `CouchError.forbidden` when the asker's access is withdrawn meanwhile.
    mutating func next(heartbeat: Duration?) async throws -> Bool {
        // A fault injector's deafness may end at any moment, without a change: it is asked each second.
        let deafness = handlers.environment.faultInjector?.deafFeeds
        while !Task.isShuttingDownGracefully, ContinuousClock.now < deadline {
            if mayHaveChanged || deafness != nil {
                mayHaveChanged = false
                if deafness?() != true, try !nothingYet() { return false }
            }
            var slice = ContinuousClock.now.duration(to: deadline)
            if deafness != nil { slice = min(slice, .seconds(1)) }
            if let heartbeat { slice = min(slice, max(.zero, heartbeat - lastBeat.duration(to: .now))) }
            let signal = signal
            mayHaveChanged = await withGracefulShutdownHandler {
                await signal.wait(timeout: slice)
            } onGracefulShutdown: {
                signal.fire()
            }
            if revocation.isRevoked() {
                throw CouchError.forbidden("Access to '\(Keyspace(collection).name)' was withdrawn while this feed waited.")
            }
            // Deleted (its close wakes the feed): a 503, so that the asker asks
            // again, of the database made again under its name, or gets its 404.
            if collection.database.isClosed {
                throw CouchError(status: 503, error: "service_unavailable",
                                 reason: "Database '\(Keyspace(collection).name)' was deleted while this feed waited; ask again.")
            }
            if let heartbeat, lastBeat.duration(to: .now) >= heartbeat {
                lastBeat = .now
                return true
            }
        }
        return false
    }

    private mutating func nothingYet() throws -> Bool {
        let found = try handlers.read(collection, spec, since: looked, limit: 1)
        looked = found.through
        return found.entries.isEmpty
    }
}
