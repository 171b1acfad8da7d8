import ServiceLifecycle
import Synchronization

/// The one start/stop pattern of the node's long-running services (``Listener``, `MeshNode`):
/// what a started service holds while it runs, and the start under way, if any.
///
/// - A second `start()` while one is under way waits for it, and gets its error if it fails.
/// - A `stop()` while a start is under way is remembered: the start then does not publish what it
///   started, and stops it itself.
package final class ServiceState<Running: Sendable>: Sendable {
    private struct State {
        var running: Running?
        var starting = false
        var stopRequested = false
        var waiting: [CheckedContinuation<Bool, any Error>] = []
    }

    private let state = Mutex(State())

    package init() {}

    /// What runs (nil: stopped).
    package func withLock<T>(_ body: (inout Running?) -> T) -> T { state.withLock { body(&$0.running) } }

    /// True when this call must start the service and then call ``endStart(_:)``; false when it
    /// runs already, or once the start under way has ended.
    /// - Throws: the error of the start under way.
    package func claimStart() async throws -> Bool {
        try await withCheckedThrowingContinuation { (waiter: CheckedContinuation<Bool, any Error>) in
            let now: Bool? = state.withLock { s in
                if s.running != nil { return false }
                if !s.starting {
                    (s.starting, s.stopRequested) = (true, false)
                    return true
                }
                s.waiting.append(waiter)
                return nil
            }
            if let now { waiter.resume(returning: now) }
        }
    }

    /// Ends a claimed start with what it started, or its error. False when it must not run: it
    /// failed, or a stop came while it was starting (the caller then stops what it started).
    package func endStart(_ outcome: Result<Running, any Error>) -> Bool {
        let (published, waiting) = state.withLock { s in
            defer { (s.starting, s.stopRequested, s.waiting) = (false, false, []) }
            guard case .success(let started) = outcome, !s.stopRequested else { return (false, s.waiting) }
            s.running = started
            return (true, s.waiting)
        }
        for waiter in waiting {
            switch outcome {
            case .success: waiter.resume(returning: false)
            case .failure(let error): waiter.resume(throwing: error)
            }
        }
        return published
    }

    /// Starts the service unless it runs or another start is under way (then it waits for that
    /// one): `launch` starts it, and if a stop came meanwhile, `undo` stops what it started.
    /// - Returns: what runs, when this call started it.
    /// - Throws: `launch`'s error, or that of the start this call waited for.
    package func start(_ launch: () async throws -> Running, undo: (Running) async -> Void) async throws -> Running? {
        guard try await claimStart() else { return nil }
        let started: Running
        do {
            started = try await launch()
        } catch {
            _ = endStart(.failure(error))
            throw error
        }
        guard endStart(.success(started)) else {
            await undo(started)
            return nil
        }
        return started
    }

    /// How many starts wait for the one under way.
    package var waitingStarts: Int { state.withLock { $0.waiting.count } }

    /// What runs, taken for stopping: the service reads as stopped from here on. A start under
    /// way is told to stop what it starts.
    package func takeForStop() -> Running? {
        state.withLock { s in
            if s.starting { s.stopRequested = true }
            defer { s.running = nil }
            return s.running
        }
    }
}

extension ServiceState {
    /// A service's `run()`: `start` starts it with its serving in child tasks of the caller's
    /// group (where the group's graceful shutdown and cancellation reach them) and returns true,
    /// or returns false when it did not start it. It then runs until those tasks end (a graceful
    /// shutdown, a `stop()`, a failure) or, when another start runs it, until the group's
    /// graceful shutdown; `stop` follows either way. A start that a `stop()` undid ends it at once.
    /// - Throws: `start`'s error, or that of a serving task (after `stop`).
    package func runAsService(
        start: (inout ThrowingTaskGroup<Void, any Error>) async throws -> Bool, stop: () async -> Void
    ) async throws {
        do {
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                guard try await start(&tasks) else {
                    // Not running: a stop() came while it started (and undid it).
                    guard withLock({ $0 != nil }) else { return }
                    try? await gracefulShutdown()
                    return
                }
                try await tasks.next()
            }
        } catch {
            await stop()
            throw error
        }
        await stop()
    }
}
