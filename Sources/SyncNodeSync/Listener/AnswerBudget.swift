import Synchronization

/// The memory that large document bodies may hold at once while answers are
/// written, shared by every answer of a listener.
///
/// An answer that meets a large body (`_changes` with docs, `_all_docs`,
/// `_bulk_get`, `_find`, `open_revs`) measures it first, reserves memory for it
/// here, and reads it only then. Readers of big databases running at once so
/// take turns instead of adding up: they slow down, they do not multiply the
/// node's memory. Reservations are served in order, so a big one is not
/// starved by a stream of small ones; one larger than the whole budget takes
/// the whole budget.
final class AnswerBudget: Sendable {
    /// Bytes the budget holds.
    let capacity: Int

    private struct Waiter {
        let id: Int
        let bytes: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var available: Int
        var waiters: [Waiter] = []
        var nextID = 0
        /// Waiters whose task was cancelled before they queued.
        var cancelled: Set<Int> = []
    }

    private let state: Mutex<State>

    init(capacity: Int) {
        self.capacity = max(1, capacity)
        state = Mutex(State(available: max(1, capacity)))
    }

    /// Bytes free now.
    var available: Int { state.withLock { $0.available } }

    /// Reservations waiting now.
    var waiting: Int { state.withLock { $0.waiters.count } }

    /// Waits until `bytes` (at most ``capacity``) are free, takes them, and
    /// returns how many were taken: give exactly that back to ``release(_:)``.
    /// - Throws: `CancellationError` when the task is cancelled while waiting,
    ///   or when the answer's client (`departure`) has left before or while it waits.
    func reserve(_ bytes: Int, departure: ClientDeparture? = nil) async throws -> Int {
        let bytes = min(max(bytes, 0), capacity)
        let id = state.withLock { s in
            defer { s.nextID += 1 }
            return s.nextID
        }
        let ask = departure?.onDeparture { [self] in withdraw(id) }
        defer { if let ask { departure?.forget(ask) } }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let outcome: Result<Void, any Error>? = state.withLock { s in
                    if s.cancelled.remove(id) != nil { return .failure(CancellationError()) }
                    if s.waiters.isEmpty, s.available >= bytes {
                        s.available -= bytes
                        return .success(())
                    }
                    s.waiters.append(Waiter(id: id, bytes: bytes, continuation: continuation))
                    return nil
                }
                if let outcome { continuation.resume(with: outcome) }
            }
        } onCancel: {
            withdraw(id)
        }
        if let ask { departure?.forget(ask) }
        state.withLock { _ = $0.cancelled.remove(id) }
        if departure?.hasDeparted == true {
            release(bytes)
            throw CancellationError()
        }
        return bytes
    }

    /// Takes reservation `id` out of the queue, failing its wait (or, not queued yet, its coming wait).
    private func withdraw(_ id: Int) {
        let waiter = state.withLock { s -> Waiter? in
            guard let index = s.waiters.firstIndex(where: { $0.id == id }) else {
                s.cancelled.insert(id)
                return nil
            }
            return s.waiters.remove(at: index)
        }
        waiter?.continuation.resume(throwing: CancellationError())
        // The queue's head may have been waiting behind this one.
        release(0)
    }

    /// Gives back what ``reserve(_:)`` took, and lets waiters in, in order.
    func release(_ bytes: Int) {
        let ready = state.withLock { s -> [Waiter] in
            s.available = min(capacity, s.available + bytes)
            var ready: [Waiter] = []
            while let first = s.waiters.first, s.available >= first.bytes {
                s.available -= first.bytes
                ready.append(s.waiters.removeFirst())
            }
            return ready
        }
        for waiter in ready { waiter.continuation.resume() }
    }
}
