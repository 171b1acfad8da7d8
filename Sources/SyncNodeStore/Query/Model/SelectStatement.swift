/// A whole SELECT query, as either front end builds it.
struct SelectStatement: Sendable, Hashable {
    var distinct = false
    var results: [SelectItem]
    var from: SourceSpec
    var joins: [JoinSpec] = []
    var whereClause: QueryExpression?
    var groupBy: [QueryExpression] = []
    var having: QueryExpression?
    var orderBy: [OrderItem] = []
    var limit: QueryExpression?
    var offset: QueryExpression?
}

/// One projection: an expression with an optional alias, or `*` / `alias.*`.
enum SelectItem: Sendable, Hashable {
    case expression(QueryExpression, alias: String?)
    /// `*` (source nil: every source) or `alias.*`, optionally renamed with AS.
    case all(source: String?, alias: String?)
}

/// A collection to read, with the alias the query calls it by.
struct SourceSpec: Sendable, Hashable {
    var collection: CollectionReference
    var alias: String?
}

/// How a query names a collection: by name (SQL++) or by object (builder).
enum CollectionReference: Sendable, Hashable {
    /// `scope` nil is the default scope; `name` `_` means `_default`.
    case named(scope: String?, name: String)
    case collection(DocumentCollection)
}

struct JoinSpec: Sendable, Hashable {
    enum Kind: String, Sendable, Hashable { case inner = "JOIN", leftOuter = "LEFT OUTER JOIN", cross = "CROSS JOIN" }
    var kind: Kind
    var source: SourceSpec
    var on: QueryExpression?
}

struct OrderItem: Sendable, Hashable {
    var expression: QueryExpression
    var descending = false
}
