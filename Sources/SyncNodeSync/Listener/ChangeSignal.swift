import Synchronization

/// Wakes a feed waiting for the next change, with a timeout.
final class ChangeSignal: Sendable {
    private struct State {
        var pending = false
        var waiter: CheckedContinuation<Bool, Never>?
        var waitID = 0
    }

    private let state = Mutex(State())

    /// Records a change; wakes the waiter if there is one.
    func fire() {
        let waiter = state.withLock { s -> CheckedContinuation<Bool, Never>? in
            if let w = s.waiter {
                s.waiter = nil
                return w
            }
            s.pending = true
            return nil
        }
        waiter?.resume(returning: true)
    }

    /// True when a change came (or had come since the last wait), false after `timeout`.
    func wait(timeout: Duration) async -> Bool {
        await withCheckedContinuation { continuation in
            let id = state.withLock { s -> Int? in
                if s.pending {
                    s.pending = false
                    return nil
                }
                s.waitID += 1
                s.waiter = continuation
                return s.waitID
            }
            guard let id else {
                continuation.resume(returning: true)
                return
            }
            Task { [self] in
                try? await Task.sleep(for: timeout)
                // Only this wait's timer may time it out.
                let expired = state.withLock { s -> CheckedContinuation<Bool, Never>? in
                    guard s.waitID == id, let w = s.waiter else { return nil }
                    s.waiter = nil
                    return w
                }
                expired?.resume(returning: false)
            }
        }
    }
}
