import Synchronization

/// The one start/stop pattern of the node's long-running services (``Listener``, `MeshNode`):
/// what a started service holds while it runs, and whether a start is under way, so that two
/// starts at once do not both bind (the second returns at once) and a stop takes what runs.
package final class ServiceState<Running: Sendable>: Sendable {
    private let state = Mutex<(running: Running?, starting: Bool)>((nil, false))

    package init() {}

    /// Reads or changes what runs (nil: stopped).
    package func withLock<T>(_ body: (inout Running?) -> T) -> T { state.withLock { body(&$0.running) } }

    /// Claims the start: false while the service runs or another start is under way. A
    /// claimed start ends with ``endStart()``, whether it succeeded or not.
    package func claimStart() -> Bool {
        state.withLock { s in
            guard s.running == nil, !s.starting else { return false }
            s.starting = true
            return true
        }
    }

    /// Ends a start claimed with ``claimStart()``.
    package func endStart() { state.withLock { $0.starting = false } }

    /// What runs, taken for stopping: the service reads as stopped from here on.
    package func takeForStop() -> Running? { withLock { r in defer { r = nil }; return r } }
}
