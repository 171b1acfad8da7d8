extension Replicator {
    /// What ended a continuous replicator's wait for work.
    enum Work {
        /// The peer's long poll answered these changes.
        case changes(PeerChanges)
        /// The peer's long poll ended with nothing to say, and nothing changed here.
        case quiet
        /// Something may have changed: a local change, an answer that was not a page, or no
        /// answer in time.
        case unknown

        var changes: PeerChanges? {
            if case .changes(let changes) = self { return changes }
            return nil
        }
    }
}
