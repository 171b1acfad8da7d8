#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Dispatch
import SyncNodeStore

extension Query {
    /// The query as a live publisher: the current results first, then the
    /// whole result set again after each commit that changed it, delivered on
    /// `queue` (default: main). Cancelling the subscription stops the query.
    ///
    /// ```swift
    /// query.changePublisher()
    ///     .map { (try? $0.results?.data(as: Task.self)) ?? [] }
    ///     .sink { [weak self] in self?.tasks = $0 }
    ///     .store(in: &subscriptions)
    /// ```
    public func changePublisher(on queue: DispatchQueue = .main) -> AnyPublisher<QueryChange, Never> {
        ListenerPublisher.make(on: queue) { [self] send in addChangeListener(on: queue, send) }
    }
}
