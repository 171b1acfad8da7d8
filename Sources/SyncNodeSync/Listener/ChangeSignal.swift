import Synchronization

/// Wakes a feed waiting for the next change, with a timeout.
package final class ChangeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Bool, Never>?
        var waitID = 0
        var timer: Task<Void, Never>?
        /// A ``fire(after:)`` is due.
        var delayed = false
    }

    private let state = Mutex(State())

    package init() {}

    /// Records a change; wakes the waiter if there is one.
    package func fire() {
        let (waiter, timer) = state.withLock { s -> (CheckedContinuation<Bool, Never>?, Task<Void, Never>?) in
            defer { s.timer = nil }
            if let w = s.waiter {
                s.waiter = nil
                return (w, s.timer)
            }
            s.pending = true
            return (nil, s.timer)
        }
        timer?.cancel()  // no sleeping task left behind per change
        waiter?.resume(returning: true)
    }

    /// Records a change `delay` from now; while one such is due, another adds nothing.
    package func fire(after delay: Duration) {
        let first = state.withLock { s in
            defer { s.delayed = true }
            return !s.delayed
        }
        guard first else { return }
        Task { [self] in
            try? await Task.sleep(for: delay)
            state.withLock { $0.delayed = false }
            fire()
        }
    }

    /// Forgets a change recorded while nobody waited: the next wait waits for a new one.
    package func clear() {
        state.withLock { $0.pending = false }
    }

    /// True when a change came (or had come since the last wait), false after
    /// `timeout` or when the waiting task is cancelled.
    package func wait(timeout: Duration) async -> Bool {
        await withTaskCancellationHandler {
            await waitUncancellable(timeout: timeout)
        } onCancel: { [self] in
            let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                defer { s.waiter = nil }
                return s.waiter
            }
            waiter?.resume(returning: false)
        }
    }

    private func waitUncancellable(timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { s -> Int? in
                if s.pending {
                    s.pending = false
                    return nil
                }
                // Cancelled before registering: the cancellation handler found no waiter.
                if Task.isCancelled { return -1 }
                s.waitID += 1
                s.waiter = continuation
                return s.waitID
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            guard id >= 0 else {
                continuation.resume(returning: false)
                return
            }
            let timer = Task { [self] in
                guard (try? await Task.sleep(for: timeout)) != nil else { return }
                // Only this wait's timer may time it out.
                let expired = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                    guard s.waitID == id, let w = s.waiter else { return nil }
                    s.waiter = nil
                    return w
                }
                expired?.resume(returning: false)
            }
            state.withLock { s in if s.waitID == id { s.timer = timer } else { timer.cancel() } }
        }
    }
}
