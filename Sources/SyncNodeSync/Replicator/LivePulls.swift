import Synchronization
import SyncNodeStore

/// The peers this process pulls each local collection from continuously and is caught up with
/// (waiting for their next change): each long poll names them to the peer it waits on
/// (`live_sources`).
///
/// In a full mesh, a node that stores a revision pulled from one peer wakes every other peer's
/// long poll, and each of those passes finds nothing it lacks: n² passes per write, in the very
/// milliseconds the write is crossing. A peer that names the revision's source among its own
/// live pulls gets it from that source directly, so the node wakes its long poll a moment later
/// instead (`Handlers.coveredWakeDelay`), with whatever else came meanwhile. A source it does not
/// name still wakes it at once: one it cannot reach, a hub's spoke, or one whose pull is busy
/// catching up (a pass in progress), for which a relay may well be quicker.
package final class LivePulls: Sendable {
    /// The process's registry.
    package static let shared = LivePulls()

    /// Per local collection (file and name): each live source's remote identity
    /// (`<server uuid>/<database>`, as pulled writes name their origin), and how many pulls hold it.
    private let state = Mutex<[String: [String: Int]]>([:])

    /// Runs `body`, a pull's wait for more from `source` once caught up, with `source` counted
    /// live for `collection` (unless `counted` is false: a push-only replication).
    func waiting<T>(on source: String, into collection: DocumentCollection, counted: Bool, _ body: () async throws -> T) async throws -> T {
        guard counted else { return try await body() }
        enter(source, into: collection)
        defer { leave(source, from: collection) }
        return try await body()
    }

    private func enter(_ source: String, into collection: DocumentCollection) {
        state.withLock { $0[collection.processKey, default: [:]][source, default: 0] += 1 }
    }

    private func leave(_ source: String, from collection: DocumentCollection) {
        state.withLock { all in
            let name = collection.processKey
            guard let count = all[name]?[source] else { return }
            all[name]?[source] = count > 1 ? count - 1 : nil
            if all[name]?.isEmpty == true { all[name] = nil }
        }
    }

    /// The live sources of `collection`, sorted, but `asked` (the peer being asked knows itself).
    func sources(of collection: DocumentCollection, except asked: String) -> [String] {
        state.withLock { $0[collection.processKey].map { $0.keys.filter { $0 != asked }.sorted() } ?? [] }
    }
}

extension DocumentCollection {
    /// The collection as this process's registries (``LivePulls``, ``InFlightRevisions``) key
    /// it: by file and name, since two files may share a database UUID.
    var processKey: String { "\(database.path.path)\u{0}\(fullName)" }
}
