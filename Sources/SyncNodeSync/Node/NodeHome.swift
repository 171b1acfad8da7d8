import Foundation

/// Where a node keeps what makes it itself: every file of `.node/` in its data directory. Each
/// path is spelled here once; the types that read and write the files ask for them here.
public struct NodeHome: Sendable, Equatable {
    /// The data directory (its databases are `NAME.syncnode/` beside `.node/`).
    public let directory: URL

    /// The home of the node whose data directory is `directory`.
    public init(directory: URL) { self.directory = directory }

    /// `.node/`: mode 0700, the owner's alone.
    public var folder: URL { directory.appendingPathComponent(".node", isDirectory: true) }
    /// `.node/uuid`: the node's stable UUID, which peers key their checkpoints and trust on.
    public var uuidFile: URL { file("uuid") }
    /// `.node/tls/`: the node's TLS certificate and key.
    public var tlsFolder: URL { folder.appendingPathComponent("tls", isDirectory: true) }
    /// `.node/tls-retired-STAMP/`: an identity retired by a rotation.
    public func retiredTLSFolder(stamp: String) -> URL { folder.appendingPathComponent("tls-retired-\(stamp)", isDirectory: true) }
    /// `.node/credential.json`: the admin credential a node makes when it is given none.
    public var credentialFile: URL { file("credential.json") }
    /// `.node/session-secret`: the key that signs session cookies.
    public var sessionSecretFile: URL { file("session-secret") }
    /// `.node/users.json`: who may sign in with a password.
    public var usersFile: URL { file("users.json") }
    /// `.node/trusted-peers`: the certificate fingerprints of trusted peers, with their scopes.
    public var trustedPeersFile: URL { file("trusted-peers") }
    /// `.node/invitations.json`: the invitations this node made (token hashes only).
    public var invitationsFile: URL { file("invitations.json") }
    /// `.node/paired-peers.json`: the pairing URLs (without tokens) of peers paired by URL.
    public var pairedPeersFile: URL { file("paired-peers.json") }
    /// `.node/running.json`: where the node serving this directory listens, while it runs.
    public var runningFile: URL { file("running.json") }

    private func file(_ name: String) -> URL { folder.appendingPathComponent(name) }
}
