import Foundation
import GRDB

/// The `indexes` table: which indexes each collection has and how they are
/// defined. SQL object names derive from row IDs, never from user text.
enum IndexCatalog {
    struct Entry {
        let id: Int64
        let name: String
        let definition: IndexDefinition

        func sqlName(collectionID: Int64) -> String {
            definition.isFullText ? "c\(collectionID)_fts\(id)" : "c\(collectionID)_ix\(id)"
        }
    }

    static func createTable(_ db: GRDB.Database) throws {
        try db.execute(sql: """
            CREATE TABLE indexes(
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                collection_id INTEGER NOT NULL,
                name TEXT NOT NULL,
                definition TEXT NOT NULL,
                UNIQUE(collection_id, name));
            """)
    }

    static func all(_ db: GRDB.Database, collectionID: Int64) throws(StoreError) -> [Entry] {
        try entries(db, "SELECT id, name, definition FROM indexes WHERE collection_id = ? ORDER BY name", [collectionID])
    }

    static func find(_ db: GRDB.Database, collectionID: Int64, name: String) throws(StoreError) -> Entry? {
        try entries(db, "SELECT id, name, definition FROM indexes WHERE collection_id = ? AND name = ?", [collectionID, name]).first
    }

    private static func entries(_ db: GRDB.Database, _ sql: String, _ arguments: StatementArguments) throws(StoreError) -> [Entry] {
        do {
            return try Row.fetchAll(db, sql: sql, arguments: arguments).map { row throws(StoreError) in try entry(row) }
        } catch {
            throw .from(error, doing: "reading the index catalog")
        }
    }

    private static func entry(_ row: Row) throws(StoreError) -> Entry {
        let text: String = row["definition"]
        guard let definition = try? JSONDecoder().decode(IndexDefinition.self, from: Data(text.utf8)) else {
            throw .storage("index '\(row["name"] as String)' has an unreadable definition")
        }
        return Entry(id: row["id"], name: row["name"], definition: definition)
    }

    static func insert(_ db: GRDB.Database, collectionID: Int64, name: String, definition: IndexDefinition) throws -> Entry {
        let json = String(decoding: try JSONEncoder().encode(definition), as: UTF8.self)
        try db.execute(sql: "INSERT INTO indexes(collection_id, name, definition) VALUES(?, ?, ?)", arguments: [collectionID, name, json])
        return Entry(id: db.lastInsertedRowID, name: name, definition: definition)
    }

    static func delete(_ db: GRDB.Database, collectionID: Int64, entry: Entry) throws {
        let sqlName = entry.sqlName(collectionID: collectionID)
        switch entry.definition {
        case .value, .selector:
            try db.execute(sql: "DROP INDEX IF EXISTS \(sqlName)")
        case .fullText:
            for suffix in ["ai", "ad", "au"] { try db.execute(sql: "DROP TRIGGER IF EXISTS \(sqlName)_\(suffix)") }
            try db.execute(sql: "DROP TABLE IF EXISTS \(sqlName)")
        }
        try db.execute(sql: "DELETE FROM indexes WHERE id = ?", arguments: [entry.id])
    }

    /// Drops every index of a collection (before its tables go).
    static func deleteAll(_ db: GRDB.Database, collectionID: Int64) throws {
        for entry in try all(db, collectionID: collectionID) { try delete(db, collectionID: collectionID, entry: entry) }
    }
}
