import GRDB

extension Database {
    /// A value the layers above keep beside the collections, one per key (the
    /// sync layer's access rules); nil when unset. `uuid` is the store's own.
    package func metadata(_ key: String) throws -> String? {
        try readStatement { db in
            try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [Self.metadataKey(key)])
        }
    }

    /// Sets (nil: removes) the value under `key`.
    package func setMetadata(_ key: String, _ value: String?) throws {
        let key = Self.metadataKey(key)
        try write { db in
            if let value {
                try db.execute(sql: "INSERT OR REPLACE INTO meta(key, value) VALUES(?, ?)", arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
            }
        }
    }

    /// Keys above the store live under a prefix, so none can overwrite the store's own (`uuid`).
    private static func metadataKey(_ key: String) -> String { "ext." + key }
}
