import Dispatch
import GRDB
import Synchronization

/// Collects the documents a transaction changes and, once it commits,
/// hands them to the listeners in commit order; a rollback discards them.
///
/// Recording happens on the writer connection's queue, and so does the
/// delivery hook, so batches reach every listener queue in commit order.
final class ChangeNotifier: Sendable {
    struct Listener: Sendable {
        let collectionID: Int64
        let documentID: String?
        let queue: DispatchQueue
        let deliver: @Sendable ([ChangedDocument]) -> Void
    }

    private struct Pending {
        var changes: [Int64: [ChangedDocument]] = [:]
        /// Per collection, each document's place in `changes`: a later change replaces it there.
        var places: [Int64: [String: Int]] = [:]
        var order: [Int64] = []
        var hooked = false
    }

    /// The `collectionID` of listeners told when collections are created or
    /// deleted in this process (live queries subscribe again then).
    static let collectionsChanged: Int64 = -1

    /// The `collectionID` of listeners told once, when the database closes (or is deleted).
    static let databaseClosed: Int64 = -2

    private let listeners = Mutex<(next: UInt64, all: [UInt64: Listener])>((0, [:]))
    private let pending = Mutex(Pending())

    func add(_ listener: Listener) -> UInt64 {
        listeners.withLock { l in
            l.next += 1
            l.all[l.next] = listener
            return l.next
        }
    }

    func remove(_ token: UInt64) {
        _ = listeners.withLock { $0.all.removeValue(forKey: token) }
    }

    var listenerCount: Int { listeners.withLock { $0.all.count } }

    /// Notes a change made by the current transaction on `db`.
    func record(_ db: GRDB.Database, collectionID: Int64, change: ChangedDocument) {
        let needsHook = pending.withLock { p -> Bool in
            if let place = p.places[collectionID]?[change.id] {
                p.changes[collectionID]?[place] = change
            } else {
                if p.changes[collectionID] == nil { p.order.append(collectionID) }
                p.places[collectionID, default: [:]][change.id] = p.changes[collectionID, default: []].count
                p.changes[collectionID, default: []].append(change)
            }
            defer { p.hooked = true }
            return !p.hooked
        }
        if needsHook {
            db.afterNextTransaction(
                onCommit: { [self] _ in flush() },
                onRollback: { [self] _ in pending.withLock { $0 = Pending() } })
        }
    }

    private func flush() {
        let batch = pending.withLock { p -> [(Int64, [ChangedDocument])] in
            defer { p = Pending() }
            return p.order.compactMap { id in p.changes[id].map { (id, $0) } }
        }
        for (collectionID, changes) in batch { deliver(collectionID: collectionID, changes: changes) }
    }

    /// Tells the ``collectionsChanged`` listeners.
    func collectionsDidChange() {
        deliver(collectionID: Self.collectionsChanged, changes: [])
    }

    /// Hands changed documents to the collection's listeners.
    func deliver(collectionID: Int64, changes: [ChangedDocument]) {
        let current = listeners.withLock { Array($0.all.sorted { $0.key < $1.key }.map(\.value)) }
        for listener in current where listener.collectionID == collectionID {
            if let documentID = listener.documentID {
                guard let change = changes.last(where: { $0.id == documentID }) else { continue }
                listener.queue.async { listener.deliver([change]) }
            } else {
                listener.queue.async { listener.deliver(changes) }
            }
        }
    }
}
