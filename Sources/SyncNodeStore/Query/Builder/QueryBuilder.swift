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
    public static func select(_ results: SelectResult...) -> Select { Select(results: results, distinct: false) }
    public static func select(_ results: [SelectResult]) -> Select { Select(results: results, distinct: false) }
    public static func selectDistinct(_ results: SelectResult...) -> Select { Select(results: results, distinct: true) }

    /// The SELECT clause; `from(_:)` makes it a runnable ``Query``.
    public struct Select: Sendable {
        let results: [SelectResult]
        let distinct: Bool

        public func from(_ source: DataSource) -> Query {
            Query(database: source.database, statement: SelectStatement(distinct: distinct, results: results.map(\.item), from: source.spec))
        }
    }
}

/// One column of a query's results.
public struct SelectResult: Sendable {
    let item: SelectItem

    public static func expression(_ e: Expression) -> SelectResult { SelectResult(item: .expression(e.tree, alias: nil)) }
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

    public static func join(_ source: DataSource) -> On { On(kind: .inner, source: source) }
    public static func innerJoin(_ source: DataSource) -> On { On(kind: .inner, source: source) }
    public static func leftJoin(_ source: DataSource) -> On { On(kind: .leftOuter, source: source) }
    public static func leftOuterJoin(_ source: DataSource) -> On { On(kind: .leftOuter, source: source) }
    public static func crossJoin(_ source: DataSource) -> Join { Join(spec: JoinSpec(kind: .cross, source: source.spec, on: nil)) }

    /// A join waiting for its ON condition.
    public struct On: Sendable {
        let kind: JoinSpec.Kind
        let source: DataSource

        public func on(_ condition: Expression) -> Join { Join(spec: JoinSpec(kind: kind, source: source.spec, on: condition.tree)) }
    }
}

/// A sort key.
public struct Ordering: Sendable {
    let item: OrderItem

    public static func property(_ path: String) -> Ordering { expression(.property(path)) }
    public static func expression(_ e: Expression) -> Ordering { Ordering(item: OrderItem(expression: e.tree)) }

    public func ascending() -> Ordering { Ordering(item: OrderItem(expression: item.expression, descending: false)) }
    public func descending() -> Ordering { Ordering(item: OrderItem(expression: item.expression, descending: true)) }
}
