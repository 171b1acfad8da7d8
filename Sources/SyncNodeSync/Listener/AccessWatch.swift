import Foundation
import Synchronization
import SyncNodeStore

/// Tells what outlives a request's sign-in (continuous and long-poll feeds, `_replicate` jobs,
/// a mesh node's replications) that who may do what has changed, so that each can check its
/// asker again and end within a second of a revocation.
///
/// Changes come from this process (a `_security` change, ``changed()``) and from files other
/// processes edit (`syncnode trust remove`, `syncnode user remove`, `syncnode invite --revoke`),
/// which ``run()`` looks at when inotify says their directory changed, and every ``backstop``
/// (every ``interval`` without inotify): a `stat` each, nothing more.
final class AccessWatch: Sendable {
    private struct State {
        var generation = 0
        var listeners: [Int: @Sendable () -> Void] = [:]
        var nextID = 0
    }

    private let state = Mutex(State())
    private let files: [URL]
    private let backstop: Duration
    /// Whether ``run()`` follows the files through inotify (else it looks every ``interval``).
    let followsWrites = Atomic(false)
    /// How often the files are looked at without inotify.
    static let interval = Duration.milliseconds(200)
    /// How often they are looked at anyway with inotify: an idle node wakes for nothing else.
    static let backstop = Duration.seconds(2)

    /// Watches `files` (the trusted peers, the users) besides the changes told in-process,
    /// looking at them every `backstop` even when inotify says nothing.
    init(files: [URL], backstop: Duration = AccessWatch.backstop) {
        self.files = files
        self.backstop = backstop
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
        let written = ChangeSignal()
        let subscriptions = Set(files.map { $0.deletingLastPathComponent().path }).compactMap {
            DirectoryWriteMonitor.shared?.subscribe(directory: $0, replacements: true) { written.fire() }
        }
        defer { for subscription in subscriptions { subscription.cancel() } }
        followsWrites.store(!subscriptions.isEmpty, ordering: .relaxed)
        let period = subscriptions.isEmpty ? Self.interval : backstop
        var stamps = files.map(FileStamp.of)
        while !Task.isCancelled {
            _ = await written.wait(timeout: period)
            let now = files.map(FileStamp.of)
            if now != stamps {
                stamps = now
                changed()
            }
        }
    }
}
