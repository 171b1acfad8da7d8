/// Builds queries in Swift, clause by clause, as Couchbase Lite's
/// `QueryBuilder` does:
///
/// ```swift
/// let query = QueryBuilder
///     .select(SelectResult.expression(Meta.id), SelectResult.property("name"))
///     .from(DataSource.collection(hotels))
///     .where(Expression.property("type").equalTo(Expression.string("hotel")))
///     .orderBy(Ordering.property("name").ascending())
///     .limit(Expression.int(10))
/// ```
public enum QueryBuilder {
    /// `SELECT results...`: one result column per item, in order.
    public static func select(_ results: SelectResult...) -> Select { Select(results: results, distinct: false) }
    /// `SELECT results...`, from an array of columns.
    public static func select(_ results: [SelectResult]) -> Select { Select(results: results, distinct: false) }
    /// `SELECT DISTINCT results...`: rows with equal values in every column appear once (integers and
    /// doubles of the same value count as equal).
    public static func selectDistinct(_ results: SelectResult...) -> Select { Select(results: results, distinct: true) }

    /// The SELECT clause; `from(_:)` makes it a runnable ``Query``.
    public struct Select: Sendable {
        let results: [SelectResult]
        let distinct: Bool

        /// `FROM source`: the query, on the source's database, ready to refine (`where`, `orderBy`...) and run.
        /// Nothing is checked until it compiles, on first run or ``Query/explain()``.
        public func from(_ source: DataSource) -> Query {
            Query(database: source.database, statement: SelectStatement(distinct: distinct, results: results.map(\.item), from: source.spec))
        }
    }
}

/// One column of a query's results.
public struct SelectResult: Sendable {
    let item: SelectItem

    /// A column holding `e`, named after a property path's last key (`geo.alt` gives `alt`) or a meta
    /// property's name (`id`, `sequence`, `deleted`...), else `$1`, `$2`... by position; ``as(_:)`` names it.
    public static func expression(_ e: Expression) -> SelectResult { SelectResult(item: .expression(e.tree, alias: nil)) }
    /// A column holding the property at `path`, named after its last key; see ``expression(_:)``.
    public static func property(_ path: String) -> SelectResult { expression(.property(path)) }
    /// The whole document, keyed by its source's alias (or collection name).
    public static func all() -> SelectResult { SelectResult(item: .all(source: nil, alias: nil)) }

    /// Names the column.
    public func `as`(_ alias: String) -> SelectResult {
        switch item {
        case .expression(let e, _): return SelectResult(item: .expression(e, alias: alias))
        case .all(let source, _): return SelectResult(item: .all(source: source, alias: alias))
        }
    }

    /// For `all()`: the document of the source with this alias.
    public func from(_ alias: String) -> SelectResult {
        guard case .all(_, let name) = item else { return self }
        return SelectResult(item: .all(source: alias, alias: name))
    }
}

/// A collection to query.
public struct DataSource: Sendable {
    let database: Database
    let spec: SourceSpec

    /// The collection, known in the query (and keyed in `SelectResult.all()` results) by its name unless
    /// renamed with ``as(_:)``. Joined collections must belong to the same database.
    public static func collection(_ collection: DocumentCollection) -> DataSource {
        DataSource(database: collection.database, spec: SourceSpec(collection: .collection(collection), alias: nil))
    }

    /// The database's default collection, keyed by the database name in `SelectResult.all()` results.
    public static func database(_ database: Database) -> DataSource {
        DataSource(database: database, spec: SourceSpec(collection: .named(scope: nil, name: database.name), alias: nil))
    }

    /// Names the source, for `Expression.property(...).from(alias)` and joins.
    public func `as`(_ alias: String) -> DataSource {
        DataSource(database: database, spec: SourceSpec(collection: spec.collection, alias: alias))
    }
}

/// A join with another collection.
public struct Join: Sendable {
    let spec: JoinSpec

    /// `JOIN source ON ...`: an inner join, the same as ``innerJoin(_:)``.
    public static func join(_ source: DataSource) -> On { On(kind: .inner, source: source) }
    /// `INNER JOIN source ON ...`: rows where the ON condition holds (is true) for a document of `source`.
    public static func innerJoin(_ source: DataSource) -> On { On(kind: .inner, source: source) }
    /// `LEFT JOIN source ON ...`, the same as ``leftOuterJoin(_:)``.
    public static func leftJoin(_ source: DataSource) -> On { On(kind: .leftOuter, source: source) }
    /// `LEFT OUTER JOIN source ON ...`: like an inner join, but a row without a matching document is kept,
    /// with `source`'s properties and meta properties MISSING.
    public static func leftOuterJoin(_ source: DataSource) -> On { On(kind: .leftOuter, source: source) }
    /// `CROSS JOIN source`: every row paired with every (non-deleted) document of `source`.
    public static func crossJoin(_ source: DataSource) -> Join { Join(spec: JoinSpec(kind: .cross, source: source.spec, on: nil)) }

    /// A join waiting for its ON condition.
    public struct On: Sendable {
        let kind: JoinSpec.Kind
        let source: DataSource

        /// The join condition; a row joins when it is true (null and MISSING are not).
        public func on(_ condition: Expression) -> Join { Join(spec: JoinSpec(kind: kind, source: source.spec, on: condition.tree)) }
    }
}

/// A sort key.
public struct Ordering: Sendable {
    let item: OrderItem

    /// Sorts by the property at `path` (a column alias of the SELECT list is used when `path` names one),
    /// ascending unless ``descending()`` is called.
    public static func property(_ path: String) -> Ordering { expression(.property(path)) }
    /// Sorts by `e`, ascending unless ``descending()`` is called. Values sort by type first (MISSING, null,
    /// booleans, numbers, strings, arrays, objects), then within their type; strings by UTF-8 bytes.
    public static func expression(_ e: Expression) -> Ordering { Ordering(item: OrderItem(expression: e.tree)) }

    /// Smallest first (MISSING and null first).
    public func ascending() -> Ordering { Ordering(item: OrderItem(expression: item.expression, descending: false)) }
    /// Largest first (MISSING and null last).
    public func descending() -> Ordering { Ordering(item: OrderItem(expression: item.expression, descending: true)) }
}
