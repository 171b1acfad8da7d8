import Foundation
import Synchronization

/// Tells what outlives a request's sign-in (continuous and long-poll feeds, `_replicate` jobs,
/// a mesh node's replications) that who may do what has changed, so that each can check its
/// asker again and end within a second of a revocation.
///
/// Changes come from this process (a `_security` change, ``changed()``) and from files other
/// processes edit (`syncnode trust remove`, `syncnode user remove`, `syncnode invite --revoke`),
/// which ``run()`` looks at every ``interval``: a `stat` each, nothing more.
final class AccessWatch: Sendable {
    private struct State {
        var generation = 0
        var listeners: [Int: @Sendable () -> Void] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    private let files: [URL]
    /// How often the files are looked at.
    static let interval = Duration.milliseconds(200)

    /// Watches `files` (the trusted peers, the users) besides the changes told in-process.
    init(files: [URL]) {
        self.files = files
    }

    /// Bumped at each change: a check made at generation N holds until it moves.
    var generation: Int { state.withLock { $0.generation } }

    /// Who may do what may have changed: every listener is called.
    func changed() {
        let listeners = state.withLock { s in
            s.generation += 1
            return Array(s.listeners.values)
        }
        for listener in listeners { listener() }
    }

    /// Calls `listener` at each change until the returned token is removed.
    func onChange(_ listener: @escaping @Sendable () -> Void) -> Int {
        state.withLock { s in
            s.nextID += 1
            s.listeners[s.nextID] = listener
            return s.nextID
        }
    }

    /// How many listen now (one per waiting feed, and the listener's own).
    var listenerCount: Int { state.withLock { $0.listeners.count } }

    func remove(_ token: Int) {
        _ = state.withLock { $0.listeners.removeValue(forKey: token) }
    }

    /// Looks at the files until cancelled.
    func run() async {
        var stamps = files.map(FileStamp.of)
        while (try? await Task.sleep(for: Self.interval)) != nil {
            let now = files.map(FileStamp.of)
            if now != stamps {
                stamps = now
                changed()
            }
        }
    }
}
