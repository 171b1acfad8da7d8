import Synchronization
import SyncNodeStore

/// The revisions this process is fetching into its local collections, shared by every
/// replication that pulls into the same collection.
///
/// In a full mesh a new revision reaches a node's feed from every peer that already holds it.
/// Each of the node's replications that saw it before it was stored used to fetch it, so the
/// same body crossed the network once per peer. Now a replication that lacks a revision another
/// is already fetching waits for that fetch and takes its result, and stores it itself: its
/// checkpoint still names only what it has stored. When that fetch fails (the peer died, the
/// link broke), the waiter fetches the revision from its own peer, so nothing is lost.
///
/// A fetched revision stays here until the replication that fetched it has stored it, and no
/// longer: a replication that asks after that finds it stored (`_revs_diff`). So does a
/// revision a replication received in its long poll's rows (``received(_:by:)``).
package final class InFlightRevisions: Sendable {
    /// The process's registry: replications of one local collection find each other through it.
    package static let shared = InFlightRevisions()

    /// Off, replications fetch what they lack whoever else is fetching it (for benchmarks that
    /// measure what sharing saves).
    package var isEnabled: Bool {
        get { enabled.load(ordering: .relaxed) }
        set { enabled.store(newValue, ordering: .relaxed) }
    }
    private let enabled = Atomic(true)

    struct Key: Hashable, Sendable {
        /// The local collection: its number here (``State/collections``). Keyed by its path
        /// and name, every key hashed a file path, about seven times per revision (a lookup,
        /// then a write): the registry then took a tenth of a 100k one-shot pull's CPU. Now a
        /// revision's key is hashed three times (claimed, fetched, stored), each a single lookup.
        let collection: Int
        let id: String
        let rev: String
    }

    /// A replication run's share of the registry: what it claims is released when it ends.
    struct Owner: Sendable {
        let registry: InFlightRevisions
        let collection: Int
        let number: UInt64
    }

    private enum Entry {
        case fetching(owner: UInt64, waiters: [UInt64: CheckedContinuation<WireRevision?, Never>])
        case fetched(owner: UInt64, WireRevision)

        var owner: UInt64 {
            switch self {
            case .fetching(let owner, _), .fetched(let owner, _): owner
            }
        }
    }

    private struct State {
        var next: UInt64 = 0
        /// Each local collection's number, by file and name (``DocumentCollection/processKey``:
        /// two files may share a database UUID). A process pulls into a few: kept for its life.
        var collections: [String: Int] = [:]
        var entries: [Key: Entry] = [:]
    }

    private let state = Mutex(State())

    /// A new owner for one replication run into `collection`.
    func owner(for collection: DocumentCollection) -> Owner? {
        guard isEnabled else { return nil }
        let name = collection.processKey
        let (number, collection) = state.withLock { s in
            s.next += 1
            let collection = s.collections[name] ?? s.collections.count
            s.collections[name] = collection
            return (s.next, collection)
        }
        return Owner(registry: self, collection: collection, number: number)
    }

    /// Splits `wanted` into the revisions `owner` now fetches (claimed) and those another run
    /// is fetching, has fetched or has received (await them with ``result(of:)``).
    func claim(_ wanted: [WantedRevisions], by owner: Owner) -> (mine: [WantedRevisions], theirs: [Key]) {
        state.withLock { s in
            var mine: [WantedRevisions] = []
            var theirs: [Key] = []
            for want in wanted {
                var revs: [String] = []
                for rev in want.revs {
                    let key = Key(collection: owner.collection, id: want.id, rev: rev)
                    // Claimed at once, one hash for the common case (nobody has it): what was
                    // there before goes back if it was another run's or this run's own claim.
                    if let old = s.entries.updateValue(.fetching(owner: owner.number, waiters: [:]), forKey: key) {
                        if old.owner != owner.number {
                            s.entries[key] = old
                            theirs.append(key)
                            continue
                        }
                        if case .fetching = old { s.entries[key] = old }  // this run's own claim, retried: its waiters stay
                    }
                    revs.append(rev)
                }
                if revs.count == want.revs.count {
                    mine.append(want)
                } else if !revs.isEmpty {
                    mine.append(WantedRevisions(id: want.id, revs: revs, attsSince: want.attsSince))
                }
            }
            return (mine, theirs)
        }
    }

    /// The revision another run fetched, once it has; nil when that fetch failed or delivered
    /// no such revision, or when the waiting task is cancelled (then fetch it yourself).
    func result(of key: Key) async -> WireRevision? {
        let waiter = state.withLock { s in
            s.next += 1
            return s.next
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now: WireRevision?? = state.withLock { s in
                    switch s.entries[key] {
                    case .fetching(let owner, var waiters)? where !Task.isCancelled:
                        waiters[waiter] = continuation
                        s.entries[key] = .fetching(owner: owner, waiters: waiters)
                        return .none
                    case .fetched(_, let doc)?: return .some(doc)
                    case .fetching?, nil: return .some(nil)
                    }
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            // A stopped replication does not wait for another's fetch to end.
            let continuation = state.withLock { s -> CheckedContinuation<WireRevision?, Never>? in
                guard case .fetching(let owner, var waiters)? = s.entries[key], let continuation = waiters.removeValue(forKey: waiter) else { return nil }
                s.entries[key] = .fetching(owner: owner, waiters: waiters)
                return continuation
            }
            continuation?.resume(returning: nil)
        }
    }

    /// Hands what `owner` fetched for its claim `mine` to the runs waiting for it. A claimed
    /// revision the peer did not deliver is released.
    func fetched(_ docs: [WireRevision], for mine: [WantedRevisions], by owner: Owner) {
        // A peer answers in the order asked: each claim is matched with the next document,
        // and a dictionary of them is made only when one is out of order or missing.
        var next = 0
        var delivered: [Key: WireRevision]?
        settle(mine, by: owner) { key in
            if next < docs.count, docs[next].rev == key.rev, docs[next].id == key.id {
                next += 1
                return docs[next - 1]
            }
            if delivered == nil {
                delivered = Dictionary(docs.map { (Key(collection: owner.collection, id: $0.id, rev: $0.rev), $0) }) { first, _ in first }
            }
            return delivered?[key]
        }
    }

    /// Holds revisions `owner` received without a fetch (each carried in its row of a node's
    /// long poll) until it has stored them, as it holds those it fetched: a sync check meanwhile
    /// asks the peer instead of trusting an earlier look, and another run that lacks one takes
    /// it from here. A revision another run holds already stays that run's.
    func received(_ docs: [WireRevision], by owner: Owner) {
        state.withLock { s in
            for doc in docs {
                let key = Key(collection: owner.collection, id: doc.id, rev: doc.rev)
                switch s.entries[key] {
                case nil, .fetched(owner.number, _)?:
                    s.entries[key] = .fetched(owner: owner.number, doc)
                default:
                    // Another run's entry stays its own; so does this run's fetch of it, with its waiters.
                    break
                }
            }
        }
    }

    /// Releases `owner`'s claim `mine` after its fetch failed: the waiters fetch for themselves.
    func failed(_ mine: [WantedRevisions], by owner: Owner) {
        settle(mine, by: owner) { _ in nil }
    }

    /// Forgets what `owner` fetched and has now stored (or had refused).
    func stored(_ docs: [WireRevision], by owner: Owner) {
        state.withLock { s in
            for doc in docs {
                guard let index = s.entries.index(forKey: Key(collection: owner.collection, id: doc.id, rev: doc.rev)),
                      case .fetched(owner.number, _) = s.entries.values[index] else { continue }
                s.entries.remove(at: index)
            }
        }
    }

    /// Releases everything `owner` still holds (its run ended, done or failed).
    func release(_ owner: Owner) {
        let waiters = state.withLock { s in
            var waiters: [CheckedContinuation<WireRevision?, Never>] = []
            for (key, entry) in s.entries where entry.owner == owner.number {
                if case .fetching(_, let w) = entry { waiters += w.values }
                s.entries[key] = nil
            }
            return waiters
        }
        for waiter in waiters { waiter.resume(returning: nil) }
    }

    /// How many of `collection`'s revisions are held here (being fetched, or fetched or received
    /// and not yet stored), and how many waits for them there are. A sync check trusts no
    /// earlier look at a peer while any is held (`Replicator.syncCheck()`).
    package func held(in collection: DocumentCollection) -> (revisions: Int, waiters: Int) {
        let name = collection.processKey
        return state.withLock { s in
            guard let number = s.collections[name] else { return (0, 0) }
            return s.entries.reduce(into: (0, 0)) { total, item in
                guard item.key.collection == number else { return }
                total.0 += 1
                if case .fetching(_, let waiters) = item.value { total.1 += waiters.count }
            }
        }
    }

    private func settle(_ mine: [WantedRevisions], by owner: Owner, _ doc: (Key) -> WireRevision?) {
        var wake: [(CheckedContinuation<WireRevision?, Never>, WireRevision?)] = []
        state.withLock { s in
            for want in mine {
                for rev in want.revs {
                    let key = Key(collection: owner.collection, id: want.id, rev: rev)
                    guard let index = s.entries.index(forKey: key), case .fetching(owner.number, let waiters) = s.entries.values[index] else { continue }
                    let found = doc(key)
                    if let found { s.entries.values[index] = .fetched(owner: owner.number, found) } else { s.entries.remove(at: index) }
                    if !waiters.isEmpty { wake += waiters.values.map { ($0, found) } }
                }
            }
        }
        for (waiter, doc) in wake { waiter.resume(returning: doc) }
    }
}
