import Foundation
import Logging

/// Where a database lives and how it keeps history.
public struct DatabaseConfiguration: Sendable {
    /// The directory holding `<name>.syncnode/` database directories.
    public var directory: URL
    /// How many generations of history each document keeps (CouchDB's `_revs_limit`).
    public var revsLimit: Int
    /// Whether a replaced revision's body is kept until ``Database/compact(progress:)``, as CouchDB
    /// does, or dropped at once, as Couchbase Lite does (the default): then the bodies kept are
    /// the leaves' (the current revision and any conflicting ones) and those of ancestors that
    /// hold blobs, by which replication knows which attachments a peer already has.
    ///
    /// Kept bodies let a client read an old revision (`GET /db/doc?rev=`) until compaction; a
    /// dropped one reads as missing, as it does in CouchDB after compaction. Dropping them about
    /// halves what an update writes.
    public var keepsAncestorBodies: Bool
    /// The logger the store writes to.
    public var logger: Logger

    /// - parameters:
    ///   - directory: defaults to the current working directory.
    ///   - revsLimit: generations of history kept per document.
    ///   - keepsAncestorBodies: keep replaced revisions' bodies until compaction.
    ///   - logger: the store's logger.
    public init(
        directory: URL? = nil, revsLimit: Int = 20, keepsAncestorBodies: Bool = false,
        logger: Logger = Logger(label: "syncnode.store")
    ) {
        self.directory = directory ?? URL(fileURLWithPath: FileManager.default.currentDirectoryPath)
        self.revsLimit = max(1, revsLimit)
        self.keepsAncestorBodies = keepsAncestorBodies
        self.logger = logger
    }
}
