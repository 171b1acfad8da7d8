import GRDB

/// A Mango selector that a changes feed filters by (CouchDB's `filter=_selector`).
///
/// It is compiled once, by the same compiler as ``MangoQuery``, into an SQL condition that SQLite
/// evaluates on each changed document's winning body as it reads the feed: no document is decoded
/// in Swift to be tested, and a feed that skips a million non-matching changes costs one scan of
/// the sequence index.
///
/// As in CouchDB, a tombstone passes only when the selector matches it: `_deleted` is true on a
/// tombstone, so `{"$or": [{"_deleted": true}, {"type": "order"}]}` also passes deletions.
package struct ChangeSelector: Sendable, Equatable {
    /// The selector, as given.
    package let selector: DocumentValue
    /// The condition on the docs table's row, aliased `s0` (or as `alias` says).
    let condition: String

    /// Compiles `selector` for `collection`'s changes.
    /// - Parameter alias: the docs table's alias in the condition; empty for none, as in a
    ///   selector index's definition (SQLite matches the two as the same expression).
    /// - Throws: ``StoreError/invalidQuery(_:)`` for a selector CouchDB would refuse, as
    ///   ``MangoQuery/query(on:includingDocuments:)`` does.
    package init(_ selector: DocumentValue, for collection: DocumentCollection, alias: String = "s0") throws(StoreError) {
        var mango = MangoCompiler()
        let source = ExpressionCompiler.Source(name: MangoCompiler.documentSource, sqlAlias: alias, collection: collection, isOuter: false)
        var expressions = ExpressionCompiler(sources: [source])
        if let condition = try mango.selector(selector, base: []) {
            self.condition = try expressions.compile(condition).asBoolean
        } else {
            self.condition = "1"
        }
        self.selector = selector
    }
}

extension DocumentCollection {
    /// The changes after `since` whose winning revision `selector` matches, in sequence order, at
    /// most `limit`; and the sequence the read covered, from which a feed goes on even when nothing
    /// matched (the last entry's when `limit` cut the read short, else the collection's last).
    package func changes(
        since: Int64, limit: Int? = nil, allLeaves: Bool = false, matching selector: ChangeSelector
    ) throws -> (entries: [ChangeEntry], through: Int64) {
        try checkLive()
        return try database.readStatement { db in
            // The end first: a document changed meanwhile moves past it and is read next time.
            let end = try lastSequence(db) ?? 0
            // Not cached: askers choose selectors, and a cache would keep every one of them.
            let statement = try db.makeStatement(sql: changesSQL(selector))
            let s = SQLiteStatement(statement.sqliteStatement, owner: statement)
            s.bind(1, since)
            s.bind(2, end)
            s.bind(3, Int64(limit ?? -1))
            let entries = try Self.changeEntries(s, allLeaves: allLeaves, includeBodies: false)
            // Cut short by the limit (0 reads nothing): covered up to the last row read.
            if let limit, entries.count >= limit { return (entries, entries.last?.sequence ?? since) }
            return (entries, max(since, end))
        }
    }

    /// How SQLite reads the changes `selector` matches (its `EXPLAIN QUERY PLAN`, one step a line):
    /// a selector index shows as `USING INDEX` with the index's SQL name.
    package func changesPlan(matching selector: ChangeSelector) throws -> String {
        try checkLive()
        return try database.readStatement { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + changesSQL(selector), arguments: [0, Int64.max, -1])
                .map { $0["detail"] as String? ?? "" }.joined(separator: "\n")
        }
    }

    /// The condition goes in as a term of its own, so SQLite can match it to a selector index's
    /// (``SelectorIndexConfiguration``), compiled from the same selector.
    private func changesSQL(_ selector: ChangeSelector) -> String {
        """
        SELECT id, rev, seq, deleted, tree FROM \(tables.docs) AS s0 \
        WHERE seq > ?1 AND seq <= ?2 AND (\(selector.condition)) ORDER BY seq LIMIT ?3
        """
    }
}
