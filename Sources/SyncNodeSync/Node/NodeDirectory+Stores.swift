/// Who may come in: the node's stores of users, trusted peers and invitations, each a file of
/// ``NodeHome``, reached through the node they belong to.
extension NodeDirectory {
    /// The users who may sign in with a password (`.node/users.json`).
    public var users: UserStore { UserStore(directory: self) }

    /// The invitations this node made (`.node/invitations.json`, token hashes only).
    public var invitations: InvitationStore { InvitationStore(directory: self) }

    /// The peers trusted by certificate (`.node/trusted-peers`), with their scopes.
    /// - Parameters:
    ///   - trusted: fingerprints trusted for this run only.
    ///   - trustOnFirstUse: trust (and record) discovered peers never seen before.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` naming the file and line when a line is not a
    ///   fingerprint, or when the file is not UTF-8 text.
    public func trustedPeers(adding trusted: [String] = [], trustOnFirstUse: Bool = false) throws -> TrustStore {
        try TrustStore(directory: self, trusted: trusted, trustOnFirstUse: trustOnFirstUse)
    }
}
