import Dispatch
import Synchronization
import SyncNodeStore

/// The listeners of one kind of replicator event, each called on its own queue.
final class ListenerRegistry<Event: Sendable>: Sendable {
    private typealias Entry = (queue: DispatchQueue, call: @Sendable (Event) -> Void)
    private let entries = Mutex<(next: UInt64, all: [UInt64: Entry])>((0, [:]))
    private let label: String

    init(label: String) { self.label = label }

    /// Registers `listener` on `queue` (default: a serial queue of its own).
    func add(queue: DispatchQueue?, _ listener: @escaping @Sendable (Event) -> Void) -> ListenerToken {
        let entry = (queue ?? DispatchQueue(label: label), listener)
        let token = entries.withLock { e in
            e.next += 1
            e.all[e.next] = entry
            return e.next
        }
        return ListenerToken { [weak self] in _ = self?.entries.withLock { $0.all.removeValue(forKey: token) } }
    }

    /// The events as an async sequence; it ends when the consuming task is cancelled.
    func stream() -> AsyncStream<Event> {
        let (stream, continuation) = AsyncStream<Event>.makeStream()
        let token = add(queue: nil) { continuation.yield($0) }
        continuation.onTermination = { _ in token.remove() }
        return stream
    }

    var isEmpty: Bool { entries.withLock { $0.all.isEmpty } }

    /// Queues `event` for every listener; events emitted in order reach each listener in that order.
    func emit(_ event: Event) {
        entries.withLock { e in
            for entry in e.all.values { entry.queue.async { entry.call(event) } }
        }
    }
}
