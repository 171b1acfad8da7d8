import Foundation
import GRDB

/// How much disk a database takes.
public struct DatabaseSize: Sendable, Equatable {
    /// The SQLite file with its write-ahead log, in bytes.
    public var file: Int
    /// The blob files (attachments), in bytes.
    public var blobs: Int
    /// Both.
    public var total: Int { file + blobs }
}

extension Database {
    /// The bytes its files take now (a database being written grows and, after a checkpoint
    /// or ``compact()``, shrinks). Counting the blobs stats every blob file; without them
    /// ``DatabaseSize/blobs`` is 0.
    public func size(countingBlobs: Bool = true) -> DatabaseSize {
        let manager = FileManager.default
        func bytes(_ path: String) -> Int { ((try? manager.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0 }
        let file = path.appendingPathComponent(Self.fileName).path
        return DatabaseSize(file: bytes(file) + bytes(file + "-wal"), blobs: countingBlobs ? blobStore.totalBytes() : 0)
    }

    /// How many generations of history each document keeps (CouchDB's `_revs_limit`): the
    /// configuration's ``DatabaseConfiguration/revsLimit`` until ``setRevsLimit(_:)`` sets one.
    public var revsLimit: Int { storedRevsLimit ?? config.revsLimit }

    /// Keeps `limit` generations of each document's history from the next write of it on,
    /// in this process and whenever the database is opened again.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a limit below 1; ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public func setRevsLimit(_ limit: Int) throws {
        guard limit >= 1 else { throw StoreError.invalidValue("the revision limit must be 1 or more, not \(limit)") }
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES('revs_limit', ?)", arguments: ["\(limit)"])
        }
        storedRevsLimit = limit
    }
}
