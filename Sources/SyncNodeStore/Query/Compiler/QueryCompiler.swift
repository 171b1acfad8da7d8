import GRDB
import GRDBSQLite

/// A query turned into one SQLite statement, with what it takes to read its rows.
struct CompiledQuery: Sendable {
    /// Each result column is two SQL columns, value then type tag; then each
    /// source's `id` and `rev` when the layout has origins.
    let sql: String
    let layout: ResultLayout
    /// Parameter name -> the SQL parameter number of its value (the tag is the next one).
    let parameterNumbers: [String: Int]
    /// The collections the query reads (live queries re-run when they change).
    let collectionIDs: Set<Int64>
}

/// Compiles a ``SelectStatement`` to SQLite SQL over the collection tables, one clause at a time.
///
/// Clauses compile in the order SQL++ text lists them (WHERE, JOIN conditions, SELECT list,
/// GROUP BY, HAVING, ORDER BY, LIMIT), so parameters are numbered in that order too.
struct QueryCompiler {
    private let statement: SelectStatement
    private let sources: [ExpressionCompiler.Source]
    private var expressions: ExpressionCompiler
    /// Values the WHERE clause guarantees to be of one kind: ORDER BY needs no type rank for them.
    private var knownKinds: Set<String> = []
    /// The SELECT list's aliased values, which ORDER BY may name.
    private var projections: [String: SQLValue] = [:]
    /// What FROM reads as `s0` instead of the first source's table: a subquery.
    private var firstSource: String?

    static func compile(_ statement: SelectStatement, database: Database, db: GRDB.Database) throws(StoreError) -> CompiledQuery {
        let sources = try sources(of: statement, database: database)
        var compiler = QueryCompiler(statement: statement, sources: sources, expressions: ExpressionCompiler(sources: sources))
        let plain = try compiler.compile(db: db)
        // A scan of one collection reads its lookups from projections of the bodies (see
        // `JSONProjection`): SQLite's JSON functions hold the last few texts they parsed for the
        // whole run. Each body is read and projected once per row, in a subquery that SQLite may
        // neither merge into the query nor push conditions into (its LIMIT and OFFSET see to
        // that): each place that read a column would hold a copy of it. A query a value index
        // serves keeps its lookups, to match the index's expressions, and so does a full-text one,
        // whose plan starts from the full-text table.
        let e = compiler.expressions
        guard statement.joins.isEmpty, e.fullText.isEmpty, let paths = e.firstSourcePaths, !paths.isEmpty,
              try !usesValueIndex(plain.sql, of: sources[0].collection, db: db) else { return plain }
        var projecting = QueryCompiler(statement: statement, sources: sources, expressions: ExpressionCompiler(sources: sources))
        let projected = ProjectFunction.sql(body: "body", projection: JSONProjection(paths: paths))
        projecting.firstSource = """
            (SELECT key, id, rev, seq, deleted, expiration\(e.readsFirstSourceWhole ? ", body" : ""), \(projected) AS projected \
            FROM \(sources[0].collection.tables.docs) WHERE deleted = 0 LIMIT -1 OFFSET 0)
            """
        projecting.expressions.firstSourceBody = "s0.projected"
        return try projecting.compile(db: db)
    }

    /// True when SQLite's plan for `sql` reads one of `collection`'s value indexes.
    private static func usesValueIndex(_ sql: String, of collection: DocumentCollection, db: GRDB.Database) throws(StoreError) -> Bool {
        let statement: GRDB.Statement
        do {
            statement = try db.makeStatement(sql: "EXPLAIN QUERY PLAN " + sql)
        } catch {
            throw .from(error, doing: "planning a query")
        }
        let index = "INDEX c\(collection.tableID)_ix"
        // The handle is only valid while `statement` lives: Swift may release it after its last use.
        return withExtendedLifetime(statement) {
            let handle = statement.sqliteStatement
            while sqlite3_step(handle) == SQLITE_ROW {
                if let detail = sqlite3_column_text(handle, 3), String(cString: detail).contains(index) { return true }
            }
            return false
        }
    }

    private mutating func compile(db: GRDB.Database) throws(StoreError) -> CompiledQuery {
        let (conditions, fullTextJoins) = try whereConditions(db: db)
        let from = try fromClause(fullTextJoins: fullTextJoins)
        let (selectList, layout) = try selectList()
        var sql = "SELECT \(statement.distinct ? "DISTINCT " : "")\(selectList) \(from) WHERE \(Self.allOf(conditions))"
        sql += try groupByClause()
        if let having = statement.having {
            sql += " HAVING \(try expressions.compile(having).asBoolean)"
        }
        sql += try orderByClause()
        sql += try limitClause()
        return CompiledQuery(sql: sql, layout: layout, parameterNumbers: expressions.parameters,
                             collectionIDs: Set(sources.map(\.collection.tableID)))
    }

    /// The FROM collection, then the joined ones, each under a unique name.
    private static func sources(of statement: SelectStatement, database: Database) throws(StoreError) -> [ExpressionCompiler.Source] {
        var specs = [statement.from]
        specs += statement.joins.map(\.source)
        var sources: [ExpressionCompiler.Source] = []
        for (i, spec) in specs.enumerated() {
            let collection = try resolve(spec.collection, database: database)
            let name = spec.alias ?? {
                if case .named(_, let n) = spec.collection { return n }
                return collection.name
            }()
            guard !sources.contains(where: { $0.name == name }) else {
                throw .invalidQuery("two sources are called '\(name)'; give one an alias with AS")
            }
            let isOuter = i > 0 && statement.joins[i - 1].kind == .leftOuter
            sources.append(.init(name: name, sqlAlias: "s\(i)", collection: collection, isOuter: isOuter))
        }
        return sources
    }

    /// WHERE's conjuncts as SQL conditions; MATCH conditions become joins with the full-text tables.
    private mutating func whereConditions(db: GRDB.Database) throws(StoreError) -> (conditions: [String], fullTextJoins: [String]) {
        var conditions = ["s0.deleted = 0"]
        var conditionsSize = 0
        var fullTextJoins: [String] = []
        for conjunct in statement.whereClause.map({ ExpressionCompiler.chain(.and, $0) }) ?? [] {
            if case .match(let indexName, let pattern) = conjunct {
                guard expressions.fullText[indexName] == nil else {
                    throw .invalidQuery("MATCH(\(indexName), ...) appears twice; combine the patterns with AND in one MATCH")
                }
                let (source, table) = try Self.fullTextTable(indexName, sources: sources, db: db)
                let alias = "f\(expressions.fullText.count)"
                expressions.fullText[indexName] = alias
                let patternValue = try expressions.compile(pattern)
                fullTextJoins.append("JOIN \(table) AS \(alias) ON \(alias).rowid = \(source.sqlAlias).key")
                conditions.append("\(alias).\(table) MATCH sn_fts_pattern(\(patternValue.asString))")
                continue
            }
            let condition = try expressions.compile(conjunct).asBoolean
            if let subject = try typedSubject(conjunct) { knownKinds.insert(subject) }
            conditions.append(condition)
            conditionsSize += condition.utf8.count
            try ExpressionCompiler.checkSize(conditionsSize)
        }
        return (conditions, fullTextJoins)
    }

    /// FROM and the JOINs, with their ON conditions.
    private mutating func fromClause(fullTextJoins: [String]) throws(StoreError) -> String {
        var from = "FROM \(firstSource ?? sources[0].collection.tables.docs) AS s0"
        for (i, join) in statement.joins.enumerated() {
            let source = sources[i + 1]
            let table = source.collection.tables.docs
            switch join.kind {
            case .cross:
                from += " JOIN \(table) AS \(source.sqlAlias) ON \(source.sqlAlias).deleted = 0"
            case .inner, .leftOuter:
                guard let on = join.on else { throw .invalidQuery("\(join.kind.rawValue) needs an ON condition") }
                let condition = try expressions.compile(on).asBoolean
                let keyword = join.kind == .inner ? "JOIN" : "LEFT JOIN"
                from += " \(keyword) \(table) AS \(source.sqlAlias) ON \(source.sqlAlias).deleted = 0 AND \(condition)"
            }
        }
        for join in fullTextJoins { from += " " + join }
        return from
    }

    /// The SELECT list (two SQL columns per result column: value, type tag) and how to read it.
    private mutating func selectList() throws(StoreError) -> (String, ResultLayout) {
        var columns: [String] = []
        var columnSources: [Int?] = []
        var selectSQL: [String] = []
        for (position, item) in statement.results.enumerated() {
            switch item {
            case .all(let sourceName, let alias):
                let chosen = try sourceName.map { (n) throws(StoreError) in [try Self.source(n, in: sources)] } ?? sources
                for source in chosen {
                    let value = try expressions.compile(.property(source: source.name, path: []))
                    columns.append((chosen.count == 1 ? alias : nil) ?? source.name)
                    columnSources.append(sources.firstIndex { $0.name == source.name })
                    selectSQL.append("\(value.sql), \(value.tag)")
                }
            case .expression(let e, let alias):
                let value = try expressions.compile(e)
                columns.append(alias ?? Self.defaultName(e, position: position))
                if case .meta(let name, .id) = e {
                    columnSources.append(name.map { n in sources.firstIndex { $0.name == n } } ?? 0)
                } else {
                    columnSources.append(nil)
                }
                selectSQL.append("\(value.sql), \(value.tag)")
                if let alias { projections[alias] = value }
            }
        }
        // Which documents each row came from, so a model decoded from it remembers its revision.
        let mergesRows = statement.distinct || !statement.groupBy.isEmpty || statement.having != nil
            || statement.results.contains { if case .expression(let e, _) = $0 { return e.containsAggregate } else { return false } }
            || statement.orderBy.contains { $0.expression.containsAggregate }
        if !mergesRows { for source in sources { selectSQL.append("\(source.sqlAlias).id, \(source.sqlAlias).rev") } }
        let layout = ResultLayout(columnNames: columns, columnSources: columnSources, originCount: mergesRows ? 0 : sources.count)
        return (selectSQL.joined(separator: ", "), layout)
    }

    private mutating func groupByClause() throws(StoreError) -> String {
        guard !statement.groupBy.isEmpty else { return "" }
        var keys: [String] = []
        for e in statement.groupBy {
            let value = try expressions.compile(e)
            // 1 and true, MISSING and null, are different groups: a JSON value's
            // text (`->`, NULL when MISSING) tells them apart in one key.
            if value.kind == .dynamic, let location = value.location {
                keys.append("(\(location.json) -> \(location.path))")
                continue
            }
            keys.append(Self.groupOrOrderKey(value.sql, kind: value.kind))
            if value.kind == .dynamic || (value.canBeMissing && value.canBeNull) { keys.append(value.tag) }
        }
        return " GROUP BY \(keys.joined(separator: ", "))"
    }

    private mutating func orderByClause() throws(StoreError) -> String {
        var keys: [String] = []
        for item in statement.orderBy {
            let value: SQLValue
            if case .property(nil, let path) = item.expression, path.count == 1, case .key(let k) = path[0], let projected = projections[k] {
                value = projected
            } else {
                value = try expressions.compile(item.expression)
            }
            // A constant orders nothing (and SQLite would read an integer as a column number).
            if value.constant != nil { continue }
            let direction = item.descending ? " DESC" : ""
            if !knownKinds.contains(value.sql), let rank = value.typeRank { keys.append(Self.groupOrOrderKey(rank, kind: .number) + direction) }
            keys.append(Self.groupOrOrderKey(value.sql, kind: value.kind) + direction)
        }
        return keys.isEmpty ? "" : " ORDER BY \(keys.joined(separator: ", "))"
    }

    private mutating func limitClause() throws(StoreError) -> String {
        guard statement.limit != nil || statement.offset != nil else { return "" }
        let limit = try statement.limit.map { (l) throws(StoreError) in "coalesce(CAST(\(try expressions.compile(l).asNumber) AS INTEGER), -1)" } ?? "-1"
        var sql = " LIMIT \(limit)"
        if let offset = statement.offset {
            sql += " OFFSET coalesce(CAST(\(try expressions.compile(offset).asNumber) AS INTEGER), 0)"
        }
        return sql
    }

    /// SQLite reads an integer in GROUP BY or ORDER BY as a column number,
    /// and folds expressions like `x AND 0` to one while parsing; computed
    /// keys are wrapped in a call it does not fold. Plain JSON values stay
    /// bare, so an index on them can still order the scan.
    private static func groupOrOrderKey(_ sql: String, kind: SQLValue.Kind) -> String {
        kind == .dynamic ? sql : "coalesce(\(sql), NULL)"
    }

    /// Conditions joined with AND as a balanced tree: SQLite refuses
    /// expressions deeper than 1000, and a long WHERE has thousands of terms.
    private static func allOf(_ conditions: [String]) -> String {
        conditions.balancedTree { "(\($0)) AND (\($1))" }
    }

    /// The value SQL of `x` in a WHERE term `x OP constant`, which holds only
    /// for values of the constant's kind: ORDER BY x can then skip its
    /// type-rank key (and so use an index).
    private mutating func typedSubject(_ conjunct: QueryExpression) throws(StoreError) -> String? {
        let subject: QueryExpression
        let constant: DocumentValue
        switch conjunct {
        case .binary(let op, let a, .literal(let c)) where op.isComparison && op != .notEqual: (subject, constant) = (a, c)
        case .binary(let op, .literal(let c), let a) where op.isComparison && op != .notEqual: (subject, constant) = (a, c)
        case .between(let a, .literal(let c), .literal): (subject, constant) = (a, c)
        default: return nil
        }
        switch constant {
        case .int, .double, .string:
            let value = try expressions.compile(subject)
            return value.kind == .dynamic ? value.sql : nil
        default:
            return nil
        }
    }

    private static func defaultName(_ e: QueryExpression, position: Int) -> String {
        switch e {
        case .property(_, let path):
            if case .key(let k)? = path.last { return k }
        case .meta(_, let property):
            return property.rawValue
        default:
            break
        }
        return "$\(position + 1)"
    }

    private static func source(_ name: String, in sources: [ExpressionCompiler.Source]) throws(StoreError) -> ExpressionCompiler.Source {
        guard let s = sources.first(where: { $0.name == name }) else {
            throw .invalidQuery("unknown source '\(name)' in '\(name).*'")
        }
        return s
    }

    static func resolve(_ reference: CollectionReference, database: Database) throws(StoreError) -> DocumentCollection {
        switch reference {
        case .collection(let c):
            guard c.database === database else {
                throw .invalidQuery("collection \(c.fullName) belongs to another database than the query's")
            }
            return c
        case .named(let scope, let name):
            do {
                if scope == nil, name == "_" || name == Names.defaultCollection || name == database.name {
                    return try database.defaultCollection()
                }
                guard let c = try database.collection(name: name, scope: scope) else {
                    throw StoreError.invalidQuery("no collection '\(name)' in scope '\(scope ?? Names.defaultScope)'")
                }
                return c
            } catch {
                throw .from(error, doing: "looking up collection '\(name)'")
            }
        }
    }

    private static func fullTextTable(_ name: String, sources: [ExpressionCompiler.Source], db: GRDB.Database) throws(StoreError) -> (ExpressionCompiler.Source, String) {
        for source in sources {
            let id = source.collection.tableID
            if let index = try IndexCatalog.find(db, collectionID: id, name: name), case .fullText = index.definition {
                return (source, index.sqlName(collectionID: id))
            }
        }
        throw .invalidQuery("no full-text index named '\(name)' on the query's collections; create one with createIndex(FullTextIndexConfiguration(...), name:)")
    }
}
