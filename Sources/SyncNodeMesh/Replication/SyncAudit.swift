import Foundation
import Synchronization
import SyncNodeSync

/// Keeps asking whether one replication with a peer is in sync, so that what the node says
/// (``MeshPeer/CollectionSync/state``) is measured, never assumed from the replicator's
/// activity alone: a continuous replicator is `idle` while it waits for the peer's feed,
/// also when that feed has not announced changes the peer has.
///
/// It judges shortly (``settle``) after a change of activity (while in sync, at most once per
/// ``inSyncGap``), and every `interval` (15 x `interval` while in sync): the changes pending
/// each way are counted (the peer is asked for its own), and the digests compared.
final class SyncAudit: Sendable {
    private let signal = ChangeSignal()
    private let task: Mutex<Task<Void, Never>?> = Mutex(nil)

    /// Starts judging `replicator`, reporting each judgement, and whether it crossed into or out of
    /// in sync since the last judgement that stood (the first one only when it is in sync).
    /// `report` returns whether the judgement stands: one of in sync that a newer status of the
    /// replicator overtook does not, and the crossing is reported again with the next judgement.
    init(replicator: Replicator, interval: Duration, report: @escaping @Sendable (Judgement, _ crossed: Bool) -> Bool) {
        let signal = signal
        task.withLock {
            $0 = Task {
                var last: Judgement?
                var stoodInSync = false
                while !Task.isCancelled {
                    let judgedAt = ContinuousClock.now
                    let judgement = await Self.judge(replicator, after: last)
                    if Task.isCancelled { return }
                    let inSync = judgement.state == .inSync
                    if report(judgement, stoodInSync != inSync) { stoodInSync = inSync }
                    last = judgement
                    // In sync, the replicator's own feed wakes it on the next change, and so do
                    // the passes it makes when a long poll ends empty (every heartbeat, 25 s): a
                    // slower look suffices to catch a feed that stays silent (15 x), and costs an
                    // idle node less.
                    guard await signal.wait(timeout: inSync ? interval * 15 : interval) else { continue }
                    // A short pass goes busy and idle again within milliseconds: judged once,
                    // after both, instead of once for each (a longer pass is judged while it runs).
                    try? await Task.sleep(for: Self.settle)
                    // In sync, the next look comes a second after the last at the soonest: in a
                    // mesh every write wakes a pass of every peer's pull, nearly all of which find
                    // nothing, and each look asks the peer (90 requests a write in ten nodes).
                    // Meanwhile a pass that runs shows the peer as catching up, never in sync.
                    if inSync { try? await Task.sleep(for: max(.zero, Self.inSyncGap - judgedAt.duration(to: .now))) }
                    signal.clear()
                }
            }
        }
    }

    /// The replicator's activity changed: judge again shortly.
    func wake() { signal.fire() }

    func stop() {
        task.withLock { $0 }?.cancel()
    }

    /// One look at a replication.
    struct Judgement: Sendable {
        var state: MeshPeer.SyncState
        /// Why it is not in sync (nil when it is).
        var reason: String?
        /// Changes not yet examined each way, when the peer could be asked.
        var pending: PendingChanges?
    }

    /// How long after a change of activity the audit judges: both changes of a short pass.
    static let settle = Duration.milliseconds(200)

    /// The shortest time between two looks while in sync.
    static let inSyncGap = Duration.seconds(1)

    /// How long the peer may take to say what it has.
    static let askTimeout = Duration.seconds(10)

    static func judge(_ replicator: Replicator, after last: Judgement?) async -> Judgement {
        let before = replicator.status
        switch before.activity {
        case .stopped:
            guard let error = before.error else { return Judgement(state: .connecting, reason: "not started yet") }
            return Judgement(state: .refused, reason: "\(error)")
        case .connecting:
            // Restarting after a refusal: still refused until a pass proves otherwise.
            if last?.state == .refused { return last ?? Judgement(state: .refused) }
            return Judgement(state: .connecting, reason: "reaching the peer")
        case .offline:
            return Judgement(state: .stalled, reason: before.error.map { "\($0)" } ?? "the peer cannot be reached")
        case .idle, .busy:
            let pending: PendingChanges
            let digestsMatch: Bool?
            do {
                (pending, digestsMatch) = try await withTimeout(askTimeout) { try await replicator.syncCheck() }
            } catch {
                return Judgement(state: .stalled, reason: "the peer could not be asked what is pending: \(error)")
            }
            let now = replicator.status
            if let refusal = now.error as? CouchError, (pending.push ?? 0) > 0 {
                return Judgement(state: .refused, reason: "the peer refuses this node's writes: \(refusal.reason)", pending: pending)
            }
            // A direction this replicator does not run is seen through the digests alone. A
            // subscription's sides differ by design: it is judged on what it pulls, and what the
            // peer pulls from here is the peer's own replication to judge.
            let unverified = digestsMatch == nil && !replicator.config.isFiltered && (pending.push == nil || pending.pull == nil)
            // Equal digests with nothing pending are in sync even while a pass runs: the passes a
            // continuous replicator makes when its long poll ends empty (every heartbeat) find
            // nothing, and must not make the node say, twice a minute, that it fell out of sync.
            // Without digests, only an idle replicator's zero counts are taken for it.
            if pending.isZero, !unverified, digestsMatch == true || (digestsMatch == nil && before.activity == .idle && now.activity == .idle) {
                return Judgement(state: .inSync, pending: pending)
            }
            var parts: [String] = []
            if let push = pending.push, push > 0 { parts.append("\(push) to push") }
            if let pull = pending.pull, pull > 0 { parts.append("\(pull) to pull") }
            if parts.isEmpty, digestsMatch == false { parts.append("the documents differ (digests), though nothing is pending this way") }
            if parts.isEmpty, unverified { parts.append("the peer serves no digest: the changes it takes from here cannot be verified") }
            if parts.isEmpty { parts.append("changes are moving") }
            return Judgement(state: .catchingUp, reason: parts.joined(separator: ", "), pending: pending)
        }
    }

    /// `body`'s result, or a timeout error after `limit` (and `body` cancelled).
    private static func withTimeout<T: Sendable>(_ limit: Duration, _ body: @escaping @Sendable () async throws -> T) async throws -> T {
        try await withThrowingTaskGroup(of: T?.self) { group in
            group.addTask { try await body() }
            group.addTask {
                try await Task.sleep(for: limit)
                return nil
            }
            defer { group.cancelAll() }
            guard let first = try await group.next(), let result = first else {
                throw SyncError.connectionFailed("the peer did not answer within \(limit)")
            }
            return result
        }
    }
}
