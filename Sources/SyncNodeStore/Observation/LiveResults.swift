import Dispatch
import Observation
import Synchronization

/// A query's results, decoded and kept current: an `@Observable` model for
/// SwiftUI views and for any other Observation user.
///
/// ```swift
/// let live = LiveResults(try db.createQuery("SELECT meta().id, title, completed FROM tasks"), as: Task.self)
/// // live.items follows every commit that changes the results.
/// ```
///
/// Results are decoded off the main thread and published on the main actor.
/// It stops when released, or on ``stop()``.
@MainActor
@Observable
public final class LiveResults<Model: Decodable & Sendable> {
    /// The current results, decoded, in query order (empty until the first run).
    public private(set) var items: [Model] = []
    /// Why the last run or its decoding failed; nil after a good run.
    public private(set) var error: (any Error)?
    /// True once the first run has been published.
    public private(set) var isLoaded = false

    @ObservationIgnored private let subscription = Subscription()

    /// Starts following `query`, decoding each row as `type` (with `dataKey`,
    /// the dictionary in that column: see ``Result/data(as:dataKey:)``).
    public init(_ query: Query, as type: Model.Type, dataKey: String? = nil) {
        let token = query.addChangeListener(on: DispatchQueue(label: "syncnode.live-results")) { [weak self] change in
            let outcome: Swift.Result<[Model], any Error>
            if let results = change.results {
                outcome = Swift.Result { try results.data(as: type, dataKey: dataKey) }
            } else {
                outcome = .failure(change.error ?? StoreError.invalidQuery("the query stopped without a reason"))
            }
            DispatchQueue.main.async { [weak self] in
                MainActor.assumeIsolated { self?.publish(outcome) }
            }
        }
        subscription.set(token)
    }

    deinit { subscription.cancel() }

    /// Stops following the query; ``items`` keeps its last value.
    public func stop() { subscription.cancel() }

    private func publish(_ outcome: Swift.Result<[Model], any Error>) {
        guard !subscription.isCancelled else { return }
        switch outcome {
        case .success(let models):
            items = models
            error = nil
        case .failure(let failure):
            error = failure
        }
        isLoaded = true
    }
}

/// The listener of a ``LiveResults``, removable from its nonisolated `deinit`.
private final class Subscription: Sendable {
    private let state = Mutex<(token: ListenerToken?, cancelled: Bool)>((nil, false))

    func set(_ token: ListenerToken) {
        let cancelled = state.withLock { s in
            s.token = token
            return s.cancelled
        }
        if cancelled { token.remove() }
    }

    var isCancelled: Bool { state.withLock { $0.cancelled } }

    func cancel() {
        let token = state.withLock { s -> ListenerToken? in
            s.cancelled = true
            defer { s.token = nil }
            return s.token
        }
        token?.remove()
    }
}
