#if canImport(Combine)
import Combine
#else
import OpenCombine
#endif
import Foundation
import SyncNodeStore

/// A publisher over a listener API that delivers on `queue`: each
/// subscription registers its own listener once the subscriber holds it, and
/// removes it when cancelled. Values that arrive before the subscriber asks
/// for them wait for its demand (on `queue` still), so the first one (a live
/// query's first results) is never lost. It never completes: cancel it.
struct ListenerPublisher<Output: Sendable>: Publisher {
    typealias Failure = Never
    typealias Register = @Sendable (@escaping @Sendable (Output) -> Void) -> ListenerToken

    let queue: DispatchQueue
    let register: Register

    static func make(on queue: DispatchQueue, _ register: @escaping Register) -> AnyPublisher<Output, Never> {
        ListenerPublisher(queue: queue, register: register).eraseToAnyPublisher()
    }

    func receive<Downstream: Subscriber>(subscriber: Downstream) where Downstream.Input == Output, Downstream.Failure == Never {
        let subscription = ListenerSubscription(downstream: AnySubscriber(subscriber), queue: queue)
        subscriber.receive(subscription: subscription)
        subscription.start(register)
    }
}

/// Hands a listener's values to one subscriber as it asks for them, in order.
/// The lock guards every field; the subscriber is called outside it, by one
/// thread at a time (`draining`).
private final class ListenerSubscription<Input: Sendable>: Subscription, @unchecked Sendable {
    private let lock = NSLock()
    private var downstream: AnySubscriber<Input, Never>?
    private var demand = Subscribers.Demand.none
    private var pending: [Input] = []
    private var draining = false
    private var token: ListenerToken?
    private let queue: DispatchQueue

    init(downstream: AnySubscriber<Input, Never>, queue: DispatchQueue) {
        self.downstream = downstream
        self.queue = queue
    }

    func start(_ register: ListenerPublisher<Input>.Register) {
        let token = register { [weak self] value in self?.arrive(value) }
        let cancelled = lock.withLock { () -> Bool in
            guard downstream != nil else { return true }
            self.token = token
            return false
        }
        if cancelled { token.remove() }
    }

    /// Values waiting for this demand go out on the delivery queue, not on the caller's thread.
    func request(_ more: Subscribers.Demand) {
        let waiting = lock.withLock { () -> Bool in
            demand += more
            return !pending.isEmpty
        }
        if waiting { queue.async { self.drain() } }
    }

    func cancel() {
        let token = lock.withLock { () -> ListenerToken? in
            downstream = nil
            pending = []
            defer { self.token = nil }
            return self.token
        }
        token?.remove()
    }

    /// Called on the delivery queue.
    private func arrive(_ value: Input) {
        lock.withLock { if downstream != nil { pending.append(value) } }
        drain()
    }

    private func drain() {
        lock.lock()
        guard !draining else { lock.unlock(); return }
        draining = true
        while let downstream, demand > 0, !pending.isEmpty {
            let value = pending.removeFirst()
            demand -= 1
            lock.unlock()
            let more = downstream.receive(value)
            lock.lock()
            demand += more
        }
        draining = false
        lock.unlock()
    }
}
