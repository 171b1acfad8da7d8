import ArgumentParser
import SyncNodeSync

/// What replications started from the command line do with conflicts (`--conflicts`).
enum ConflictPolicy: String, ExpressibleByArgument, CaseIterable {
    /// The replicator's resolver picks the winner and tombstones the other
    /// leaves, the same way on every node, so conflicts do not pile up.
    case resolve
    /// Conflicts stay, as CouchDB keeps them, for the app or a person to resolve.
    case keep

    var resolver: ConflictResolver? { self == .resolve ? .default : nil }
}
