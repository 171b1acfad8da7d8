import GRDB

extension DocumentCollection {
    /// Creates an index, or does nothing when one with this name and the same
    /// definition exists.
    ///
    /// - Throws: ``StoreError/alreadyExists(_:)`` when the name is taken by a
    ///   different definition; ``StoreError/invalidQuery(_:)`` when an expression does not parse or
    ///   compile, uses an aggregate, or the list of expressions or properties is empty;
    ///   ``StoreError/invalidName(_:reason:)`` for an empty name; ``StoreError/collectionDeleted(_:)``,
    ///   ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    public func createIndex(_ configuration: some IndexConfiguration, name: String) throws {
        try checkLive()
        guard !name.isEmpty else { throw StoreError.invalidName(name, reason: "an index name cannot be empty") }
        let definition = configuration.definition
        // Compile before writing, so a bad expression changes nothing.
        let columns = try indexColumns(definition)
        try database.write { db in
            if let existing = try IndexCatalog.find(db, collectionID: tableID, name: name) {
                guard existing.definition == definition else {
                    throw StoreError.alreadyExists("index '\(name)' on \(fullName) with another definition; delete it first")
                }
                return
            }
            let entry = try IndexCatalog.insert(db, collectionID: tableID, name: name, definition: definition)
            database.schemaChanges(db)
            let sqlName = entry.sqlName(collectionID: tableID)
            switch definition {
            case .value:
                try db.execute(sql: "CREATE INDEX \(sqlName) ON \(tables.docs)(\(columns.joined(separator: ", ")))")
                // Statistics let the planner prefer the new index over scanning in ID order.
                try db.execute(sql: "ANALYZE \(sqlName)")
            case .fullText(let properties, let ignoreAccents, let language):
                try createFullText(db, table: sqlName, properties: properties, paths: columns, ignoreAccents: ignoreAccents, language: language)
            case .selector:
                try createSelectorIndex(db, name: sqlName, condition: columns[0])
            }
        }
        // Open reader connections keep planning with the schema they loaded; new ones see the index.
        database.pool.invalidateReadOnlyConnections()
        database.logger.info("created index", metadata: ["collection": "\(fullName)", "index": "\(name)"])
    }

    /// Deletes the index `name`.
    /// - Throws: ``StoreError/notFound(_:_:)`` (``StoreError/Subject/index``) when there is no such index;
    ///   ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``, ``StoreError/storage(_:)``.
    public func deleteIndex(name: String) throws {
        try checkLive()
        try database.write { db in
            guard let entry = try IndexCatalog.find(db, collectionID: tableID, name: name) else {
                throw StoreError.notFound(.index, "index '\(name)' on \(fullName)")
            }
            try IndexCatalog.delete(db, collectionID: tableID, entry: entry)
            database.schemaChanges(db)
        }
        database.pool.invalidateReadOnlyConnections()
    }

    /// The names of the collection's indexes, sorted.
    /// - Throws: ``StoreError/collectionDeleted(_:)``, ``StoreError/databaseClosed(_:)``,
    ///   ``StoreError/storage(_:)``.
    public var indexes: [String] {
        get throws {
            try checkLive()
            return try database.read { db in try IndexCatalog.all(db, collectionID: tableID).map(\.name) }
        }
    }

    /// Each index's name and definition, sorted by name.
    package var indexDefinitions: [(name: String, definition: IndexDefinition)] {
        get throws {
            try checkLive()
            return try database.read { db in try IndexCatalog.all(db, collectionID: tableID).map { ($0.name, $0.definition) } }
        }
    }

    /// The SQL of each value index key (the exact expressions queries compile
    /// to, so SQLite's planner matches them), or each full-text property's JSON path.
    private func indexColumns(_ definition: IndexDefinition) throws(StoreError) -> [String] {
        var compiler = ExpressionCompiler(sources: [.init(name: name, sqlAlias: "", collection: self, isOuter: false)])
        switch definition {
        case .value(let expressions):
            guard !expressions.isEmpty else { throw .invalidQuery("a value index needs at least one expression") }
            return try expressions.map { (text) throws(StoreError) in
                let e = try SQLPPParser.parseExpression(text)
                guard !e.containsAggregate else { throw .invalidQuery("an index expression cannot use an aggregate: \(text)") }
                return try compiler.compile(e).sql
            }
        case .fullText(let properties, _, _):
            guard !properties.isEmpty else { throw .invalidQuery("a full-text index needs at least one property") }
            return try properties.map { (path) throws(StoreError) in
                try ExpressionCompiler.appending(PathComponent.parse(dotted: path), to: "'$'")
            }
        case .selector(let json):
            let selector: DocumentValue
            do { selector = try DocumentValue(json: json) } catch { throw .invalidQuery("a selector index's selector is not JSON: \(json)") }
            guard case .dictionary = selector else { throw .invalidQuery("a selector index needs a selector object, not \(json)") }
            let condition = try ChangeSelector(selector, for: self, alias: "").condition
            guard condition != "1" else { throw .invalidQuery("a selector index needs a selector that leaves something out, not \(json)") }
            return [condition]
        }
    }

    /// A partial index on the change sequence of the rows `condition` matches: the changes feed's
    /// query with the same condition reads it instead of the whole sequence range.
    private func createSelectorIndex(_ db: GRDB.Database, name: String, condition: String) throws {
        do {
            try db.execute(sql: "CREATE INDEX \(name) ON \(tables.docs)(seq) WHERE \(condition)")
        } catch let error as DatabaseError where error.resultCode == .SQLITE_ERROR {
            // SQLite refuses subqueries (what tests of array elements compile to) and functions
            // that are not deterministic in a partial index; its own words say which.
            throw StoreError.invalidQuery("this selector cannot be indexed (\(error.message ?? "SQLite refused it")); selectors that test array elements never can")
        }
        try db.execute(sql: "ANALYZE \(name)")
    }

    /// An FTS5 table whose rowid is the document's key, kept current by
    /// triggers on the documents table, so every write path (saves,
    /// replication, purges, expiry) updates it in the same transaction.
    private func createFullText(_ db: GRDB.Database, table: String, properties: [String], paths: [String], ignoreAccents: Bool, language: String?) throws {
        let columns = properties.map(FullTextPattern.quoted).joined(separator: ", ")
        let tokenizer = (IndexDefinition.stems(language) ? "porter " : "") + "unicode61 remove_diacritics \(ignoreAccents ? 2 : 0)"
        func values(of body: String) -> String { paths.map { "json_extract(\(body), \($0))" }.joined(separator: ", ") }
        let newValues = values(of: "new.body")
        try db.execute(sql: """
            CREATE VIRTUAL TABLE \(table) USING fts5(\(columns), tokenize = '\(tokenizer)');
            CREATE TRIGGER \(table)_ai AFTER INSERT ON \(tables.docs) WHEN new.deleted = 0 BEGIN
                INSERT INTO \(table)(rowid, \(columns)) VALUES (new.key, \(newValues));
            END;
            CREATE TRIGGER \(table)_ad AFTER DELETE ON \(tables.docs) BEGIN
                DELETE FROM \(table) WHERE rowid = old.key;
            END;
            CREATE TRIGGER \(table)_au AFTER UPDATE OF body, deleted ON \(tables.docs) BEGIN
                DELETE FROM \(table) WHERE rowid = old.key;
                INSERT INTO \(table)(rowid, \(columns)) SELECT new.key, \(newValues) WHERE new.deleted = 0;
            END;
            INSERT INTO \(table)(rowid, \(columns)) SELECT key, \(values(of: "body")) FROM \(tables.docs) WHERE deleted = 0;
            """)
    }
}
