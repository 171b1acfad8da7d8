import Dispatch
import Synchronization

/// What a live query's listener receives: the whole new result set, or the
/// error that stopped the query from running.
public struct QueryChange: Sendable {
    /// The query that changed.
    public let query: Query
    /// The current results; nil when `error` is set.
    public let results: ResultSet?
    /// Why the query could not run.
    public let error: (any Error)?
}

extension Query {
    /// Runs the query now and again after every commit that touches a
    /// collection it reads (bursts of commits coalesce into one run); calls
    /// `listener` on `queue` (default: main) with the first results and then
    /// only when the results changed.
    public func addChangeListener(
        on queue: DispatchQueue = .main,
        _ listener: @escaping @Sendable (QueryChange) -> Void
    ) -> ListenerToken {
        let observer = LiveQueryObserver(query: self, queue: queue, listener: listener)
        live.add(observer)
        observer.start()
        return ListenerToken { [live] in
            observer.stop()
            live.remove(observer)
        }
    }

    /// Stops a listener added with ``addChangeListener(on:_:)``.
    public func removeChangeListener(withToken token: ListenerToken) { token.remove() }

    /// The query's results as an async sequence: the current results first,
    /// then each changed result set. It ends when the consuming task is
    /// cancelled, and throws if the query cannot run.
    public func changes() -> AsyncThrowingStream<ResultSet, any Error> {
        let (stream, continuation) = AsyncThrowingStream<ResultSet, any Error>.makeStream()
        let token = addChangeListener(on: DispatchQueue(label: "syncnode.query.changes")) { change in
            if let results = change.results { continuation.yield(results) } else if let error = change.error { continuation.finish(throwing: error) }
        }
        continuation.onTermination = { _ in token.remove() }
        return stream
    }
}

/// The live observers of one query, so new parameters reach all of them.
final class LiveQueryHub: Sendable {
    private let observers = Mutex<[ObjectIdentifier: LiveQueryObserver]>([:])

    func add(_ observer: LiveQueryObserver) { observers.withLock { $0[ObjectIdentifier(observer)] = observer } }
    func remove(_ observer: LiveQueryObserver) { _ = observers.withLock { $0.removeValue(forKey: ObjectIdentifier(observer)) } }
    func parametersChanged() { for observer in observers.withLock({ Array($0.values) }) { observer.schedule() } }
    var count: Int { observers.withLock { $0.count } }
}

/// One live listener: re-runs its query on a private serial queue after
/// relevant commits and reports changed results on the listener's queue.
final class LiveQueryObserver: Sendable {
    private let query: Query
    private let queue: DispatchQueue
    private let work = DispatchQueue(label: "syncnode.livequery")
    private let listener: @Sendable (QueryChange) -> Void
    private let state = Mutex(State())

    private struct State {
        var stopped = false
        var pending = false
        var delivered = false
        var last: ResultSet?
        var lastError: String?
        /// Collection ID -> notifier token, for the collections the query reads.
        var tokens: [Int64: UInt64] = [:]
        var collectionsToken: UInt64?
        /// Whether the query compiled at the last subscription; nil before the first.
        var compiled: Bool?
    }

    init(query: Query, queue: DispatchQueue, listener: @escaping @Sendable (QueryChange) -> Void) {
        self.query = query
        self.queue = queue
        self.listener = listener
    }

    func start() {
        // Collections created or deleted later can change what the query reads (one it
        // names may not exist yet): subscribe again then.
        let token = query.database.notifier.add(
            .init(collectionID: ChangeNotifier.collectionsChanged, documentID: nil, queue: work) { [weak self] _ in self?.subscribe() })
        state.withLock { $0.collectionsToken = token }
        work.async { [self] in subscribe() }
    }

    /// Listens to the collections the query reads now, then re-runs it when
    /// that changed (a schema change elsewhere leaves it alone). A query that
    /// does not compile listens to none; its run reports the error.
    private func subscribe() {
        let notifier = query.database.notifier
        let compiledIDs = try? query.collectionIDs()
        let ids = compiledIDs ?? []
        let (added, removed, changed) = state.withLock { s -> ([Int64], [UInt64], Bool) in
            guard !s.stopped else { return ([], [], false) }
            let removed = s.tokens.filter { !ids.contains($0.key) }
            for (id, _) in removed { s.tokens[id] = nil }
            let added = Array(ids.filter { s.tokens[$0] == nil })
            let changed = s.compiled != (compiledIDs != nil) || !added.isEmpty || !removed.isEmpty
            s.compiled = compiledIDs != nil
            return (added, removed.map(\.value), changed)
        }
        for token in removed { notifier.remove(token) }
        for id in added {
            let token = notifier.add(.init(collectionID: id, documentID: nil, queue: work) { [weak self] _ in self?.schedule() })
            let stopped = state.withLock { s -> Bool in
                if !s.stopped { s.tokens[id] = token }
                return s.stopped
            }
            if stopped { notifier.remove(token) }
        }
        if changed { schedule() }
    }

    func stop() {
        let tokens = state.withLock { s -> [UInt64] in
            s.stopped = true
            defer { s.tokens = [:]; s.collectionsToken = nil }
            return Array(s.tokens.values) + (s.collectionsToken.map { [$0] } ?? [])
        }
        for token in tokens { query.database.notifier.remove(token) }
        // Let a run in progress finish, so closing the database right after is safe.
        work.sync {}
    }

    /// Queues a re-run unless one is queued already: commits that arrive
    /// before it runs are covered by it.
    func schedule() {
        let needed = state.withLock { s -> Bool in
            guard !s.stopped, !s.pending else { return false }
            s.pending = true
            return true
        }
        guard needed else { return }
        work.async { [self] in
            state.withLock { $0.pending = false }
            rerun()
        }
    }

    private func rerun() {
        guard !state.withLock({ $0.stopped }) else { return }
        do {
            let results = try query.execute()
            let changed = state.withLock { s -> Bool in
                defer { s.last = results; s.delivered = true; s.lastError = nil }
                return !s.delivered || s.last != results
            }
            if changed { report(QueryChange(query: query, results: results, error: nil)) }
        } catch {
            let changed = state.withLock { s -> Bool in
                defer { s.lastError = "\(error)"; s.delivered = true; s.last = nil }
                return s.lastError != "\(error)"
            }
            if changed { report(QueryChange(query: query, results: nil, error: error)) }
        }
    }

    private func report(_ change: QueryChange) {
        queue.async { [self] in
            guard !state.withLock({ $0.stopped }) else { return }
            listener(change)
        }
    }
}
