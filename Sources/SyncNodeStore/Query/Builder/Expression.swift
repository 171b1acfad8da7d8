import Foundation

/// A query expression built in Swift: properties, constants, parameters,
/// operators and functions. It compiles exactly as the same SQL++ would.
///
/// ```swift
/// Expression.property("type").equalTo(Expression.string("hotel"))
///     .and(Expression.property("geo.alt").greaterThanOrEqualTo(Expression.int(300)))
/// ```
public struct Expression: Sendable, Hashable {
    let tree: QueryExpression

    init(_ tree: QueryExpression) { self.tree = tree }

    // MARK: - Leaves

    /// A property path: `"name"`, `"geo.alt"`, `"likes[0]"` (`\.` escapes a dot in a name).
    public static func property(_ path: String) -> Expression { Expression(.property(source: nil, path: PathComponent.parse(dotted: path))) }
    /// The whole document (`*`); `Function.count(Expression.all())` counts rows.
    public static func all() -> Expression { Expression(.property(source: nil, path: [])) }
    public static func string(_ value: String?) -> Expression { Expression(.literal(value.map(DocumentValue.string) ?? .null)) }
    public static func int(_ value: Int) -> Expression { Expression(.literal(.int(Int64(value)))) }
    public static func int64(_ value: Int64) -> Expression { Expression(.literal(.int(value))) }
    public static func double(_ value: Double) -> Expression { Expression(.literal((try? .number(value)) ?? .null)) }
    /// Stored as its printed decimal (`0.1`, not 0.10000000149011612), like `setFloat` and Codable models, so they compare equal.
    public static func float(_ value: Float) -> Expression { Expression(.literal((try? .number(value)) ?? .null)) }
    public static func boolean(_ value: Bool) -> Expression { Expression(.literal(.bool(value))) }
    public static func date(_ value: Date?) -> Expression { string(value.map(ISODate.string(from:))) }
    /// Any JSON-compatible constant (`nil` is null); a value without a JSON form becomes null.
    public static func value(_ value: Any?) -> Expression { Expression(.literal((try? DocumentValue(any: value)) ?? .null)) }
    /// The MISSING constant.
    public static let missing = Expression(.missing)
    /// A `$name` parameter, set through ``Query/parameters``.
    public static func parameter(_ name: String) -> Expression { Expression(.parameter(name)) }
    /// `NOT expression`.
    public static func not(_ expression: Expression) -> Expression { Expression(.unary(.not, expression.tree)) }
    /// `-expression`.
    public static func negated(_ expression: Expression) -> Expression { Expression(.unary(.negate, expression.tree)) }

    /// Reads the property (or meta property) from the source with this alias
    /// (needed in joins). Other expressions are returned unchanged.
    public func from(_ alias: String) -> Expression {
        switch tree {
        case .property(_, let path): return Expression(.property(source: alias, path: path))
        case .meta(_, let property): return Expression(.meta(source: alias, property))
        default: return self
        }
    }

    // MARK: - Operators

    private func binary(_ op: BinaryOperator, _ other: Expression) -> Expression { Expression(.binary(op, tree, other.tree)) }

    public func add(_ e: Expression) -> Expression { binary(.add, e) }
    public func subtract(_ e: Expression) -> Expression { binary(.subtract, e) }
    public func multiply(_ e: Expression) -> Expression { binary(.multiply, e) }
    public func divide(_ e: Expression) -> Expression { binary(.divide, e) }
    public func modulo(_ e: Expression) -> Expression { binary(.modulo, e) }
    /// String concatenation (`||`).
    public func concat(_ e: Expression) -> Expression { binary(.concat, e) }
    public func equalTo(_ e: Expression) -> Expression { binary(.equal, e) }
    public func notEqualTo(_ e: Expression) -> Expression { binary(.notEqual, e) }
    public func lessThan(_ e: Expression) -> Expression { binary(.less, e) }
    public func lessThanOrEqualTo(_ e: Expression) -> Expression { binary(.lessOrEqual, e) }
    public func greaterThan(_ e: Expression) -> Expression { binary(.greater, e) }
    public func greaterThanOrEqualTo(_ e: Expression) -> Expression { binary(.greaterOrEqual, e) }
    public func and(_ e: Expression) -> Expression { binary(.and, e) }
    public func or(_ e: Expression) -> Expression { binary(.or, e) }
    /// Pattern match: `%` any run of characters, `_` one; ASCII letters match either case.
    public func like(_ pattern: Expression) -> Expression { binary(.like, pattern) }
    /// Regular-expression match (case-sensitive), as `REGEXP_LIKE(self, pattern)`.
    public func regex(_ pattern: Expression) -> Expression { Expression(.function("REGEXP_LIKE", [tree, pattern.tree])) }
    public func between(_ lower: Expression, and upper: Expression) -> Expression { Expression(.between(tree, lower: lower.tree, upper: upper.tree)) }
    public func `in`(_ values: [Expression]) -> Expression { Expression(.inList(tree, values.map(\.tree))) }
    public func notIn(_ values: [Expression]) -> Expression { Expression(.unary(.not, .inList(tree, values.map(\.tree)))) }
    public func isNull() -> Expression { Expression(.check(tree, .null, negated: false)) }
    public func isNotNull() -> Expression { Expression(.check(tree, .null, negated: true)) }
    public func isMissing() -> Expression { Expression(.check(tree, .missing, negated: false)) }
    public func isNotMissing() -> Expression { Expression(.check(tree, .missing, negated: true)) }
    /// Neither null nor MISSING.
    public func isValued() -> Expression { Expression(.check(tree, .valued, negated: false)) }
    public func isNotValued() -> Expression { Expression(.check(tree, .valued, negated: true)) }
}

/// Document metadata for queries: `Meta.id`, `Meta.sequence`...; use
/// `.from(alias)` in joins.
public enum Meta {
    public static let id = Expression(.meta(source: nil, .id))
    public static let sequence = Expression(.meta(source: nil, .sequence))
    public static let isDeleted = Expression(.meta(source: nil, .deleted))
    /// When the document expires, in milliseconds since 1970; MISSING when it does not.
    public static let expiration = Expression(.meta(source: nil, .expiration))
    public static let revisionID = Expression(.meta(source: nil, .revisionID))
}

/// Functions usable in expressions.
public enum Function {
    private static func call(_ name: String, _ args: Expression...) -> Expression { Expression(.function(name, args.map(\.tree))) }

    /// Counts rows where the value is neither null nor MISSING; `count(Expression.all())` counts rows.
    public static func count(_ e: Expression) -> Expression {
        e.tree == .property(source: nil, path: []) ? Expression(.countAll) : call("COUNT", e)
    }
    public static func sum(_ e: Expression) -> Expression { call("SUM", e) }
    public static func avg(_ e: Expression) -> Expression { call("AVG", e) }
    public static func min(_ e: Expression) -> Expression { call("MIN", e) }
    public static func max(_ e: Expression) -> Expression { call("MAX", e) }
    public static func lower(_ e: Expression) -> Expression { call("LOWER", e) }
    public static func upper(_ e: Expression) -> Expression { call("UPPER", e) }
    public static func length(_ e: Expression) -> Expression { call("LENGTH", e) }
    public static func trim(_ e: Expression) -> Expression { call("TRIM", e) }
    public static func ltrim(_ e: Expression) -> Expression { call("LTRIM", e) }
    public static func rtrim(_ e: Expression) -> Expression { call("RTRIM", e) }
    /// True when the string contains `substring` (case-sensitive).
    public static func contains(_ e: Expression, substring: Expression) -> Expression { call("CONTAINS", e, substring) }
    public static func abs(_ e: Expression) -> Expression { call("ABS", e) }
    public static func ceil(_ e: Expression) -> Expression { call("CEIL", e) }
    public static func floor(_ e: Expression) -> Expression { call("FLOOR", e) }
    public static func round(_ e: Expression, digits: Expression? = nil) -> Expression {
        digits.map { call("ROUND", e, $0) } ?? call("ROUND", e)
    }
    public static func trunc(_ e: Expression) -> Expression { call("TRUNC", e) }
    public static func sign(_ e: Expression) -> Expression { call("SIGN", e) }
    public static func sqrt(_ e: Expression) -> Expression { call("SQRT", e) }
    public static func power(base: Expression, exponent: Expression) -> Expression { call("POWER", base, exponent) }
    public static func exp(_ e: Expression) -> Expression { call("EXP", e) }
    public static func ln(_ e: Expression) -> Expression { call("LN", e) }
    /// Base-10 logarithm.
    public static func log(_ e: Expression) -> Expression { call("LOG", e) }
    public static func sin(_ e: Expression) -> Expression { call("SIN", e) }
    public static func cos(_ e: Expression) -> Expression { call("COS", e) }
    public static func tan(_ e: Expression) -> Expression { call("TAN", e) }
    public static func pi() -> Expression { call("PI") }
    public static func e() -> Expression { call("E") }
}

/// Array functions.
public enum ArrayFunction {
    /// True when the array holds an element equal to `value`.
    public static func contains(_ array: Expression, value: Expression) -> Expression { Expression(.function("ARRAY_CONTAINS", [array.tree, value.tree])) }
    public static func length(_ array: Expression) -> Expression { Expression(.function("ARRAY_LENGTH", [array.tree])) }
}

/// `ANY` / `EVERY` over an array: `ArrayExpression.any(v).in(array).satisfies(condition on v)`.
public enum ArrayExpression {
    /// The loop variable, for use inside `satisfies`.
    public static func variable(_ name: String) -> Expression { Expression.property(name) }
    public static func any(_ variable: String) -> Quantified { Quantified(quantifier: .any, variable: variable) }
    public static func every(_ variable: String) -> Quantified { Quantified(quantifier: .every, variable: variable) }

    public struct Quantified: Sendable {
        let quantifier: Quantifier
        let variable: String
        var collection: Expression?

        public func `in`(_ array: Expression) -> Quantified {
            var copy = self
            copy.collection = array
            return copy
        }

        public func satisfies(_ condition: Expression) -> Expression {
            Expression(.quantified(quantifier, variable: variable, in: collection?.tree ?? .missing, satisfies: condition.tree))
        }
    }
}

/// Full-text search: `FullTextFunction.match(indexName: "nameFTS", query: "buy")`.
public enum FullTextFunction {
    /// True for documents whose indexed properties match the pattern.
    public static func match(indexName: String, query: String) -> Expression { Expression(.match(index: indexName, pattern: .literal(.string(query)))) }
    /// The relevance of a matching document (higher is better): order by it descending.
    public static func rank(indexName: String) -> Expression { Expression(.rank(index: indexName)) }
}

/// The older spelling: `FullTextExpression.index("nameFTS").match("buy")`.
public struct FullTextExpression: Sendable {
    let name: String
    public static func index(_ name: String) -> FullTextExpression { FullTextExpression(name: name) }
    public func match(_ query: String) -> Expression { FullTextFunction.match(indexName: name, query: query) }
}
