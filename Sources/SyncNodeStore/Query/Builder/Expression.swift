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
    /// A string constant; nil is JSON null.
    public static func string(_ value: String?) -> Expression { Expression(.literal(value.map(DocumentValue.string) ?? .null)) }
    /// An integer constant.
    public static func int(_ value: Int) -> Expression { Expression(.literal(.int(Int64(value)))) }
    /// A 64-bit integer constant.
    public static func int64(_ value: Int64) -> Expression { Expression(.literal(.int(value))) }
    /// A number constant (integral values are stored as integers, as documents store them); NaN and the
    /// infinities, which JSON cannot hold, become null.
    public static func double(_ value: Double) -> Expression { Expression(.literal((try? .number(value)) ?? .null)) }
    /// Stored as its printed decimal (`0.1`, not 0.10000000149011612), like `setFloat` and Codable models, so they compare equal.
    public static func float(_ value: Float) -> Expression { Expression(.literal((try? .number(value)) ?? .null)) }
    /// `TRUE` or `FALSE`.
    public static func boolean(_ value: Bool) -> Expression { Expression(.literal(.bool(value))) }
    /// The date as the ISO-8601 string `setDate` stores (UTC, with milliseconds); nil is null. It compares as
    /// a string, so chronologically only against dates written the same way.
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

    /// `self + e`. Like every arithmetic operator: MISSING if either side is MISSING, else null if either
    /// side is null or not a number (strings and booleans are not converted).
    public func add(_ e: Expression) -> Expression { binary(.add, e) }
    /// `self - e`; MISSING or null as for ``add(_:)``.
    public func subtract(_ e: Expression) -> Expression { binary(.subtract, e) }
    /// `self * e`; MISSING or null as for ``add(_:)``.
    public func multiply(_ e: Expression) -> Expression { binary(.multiply, e) }
    /// `self / e`, always in floating point (`7 / 2` is 3.5); null for a division by zero, else MISSING or
    /// null as for ``add(_:)``.
    public func divide(_ e: Expression) -> Expression { binary(.divide, e) }
    /// `self % e` on both operands truncated to integers (`7.9 % 2` is 1); null for a zero divisor, else
    /// MISSING or null as for ``add(_:)``.
    public func modulo(_ e: Expression) -> Expression { binary(.modulo, e) }
    /// String concatenation (`||`).
    public func concat(_ e: Expression) -> Expression { binary(.concat, e) }
    /// `self = e`, typed: values of different types are never equal (`"1" = 1` and `TRUE = 1` are false),
    /// integers and doubles compare as numbers; MISSING if either side is MISSING, else null if either is null.
    public func equalTo(_ e: Expression) -> Expression { binary(.equal, e) }
    /// `self != e`: the negation of ``equalTo(_:)``, so values of different types are unequal (true); MISSING
    /// and null as for ``equalTo(_:)``.
    public func notEqualTo(_ e: Expression) -> Expression { binary(.notEqual, e) }
    /// `self < e`, typed like ``equalTo(_:)``: values of different types are not ordered (false); strings
    /// compare by UTF-8 bytes (case-sensitive).
    public func lessThan(_ e: Expression) -> Expression { binary(.less, e) }
    /// `self <= e`, typed like ``lessThan(_:)``.
    public func lessThanOrEqualTo(_ e: Expression) -> Expression { binary(.lessOrEqual, e) }
    /// `self > e`, typed like ``lessThan(_:)``.
    public func greaterThan(_ e: Expression) -> Expression { binary(.greater, e) }
    /// `self >= e`, typed like ``lessThan(_:)``.
    public func greaterThanOrEqualTo(_ e: Expression) -> Expression { binary(.greaterOrEqual, e) }
    /// `self AND e` on truthiness (`false` and 0 are false; strings, arrays and objects true): false when
    /// either side is false, whatever the other; else MISSING if either side is MISSING, null if either is
    /// null, otherwise true.
    public func and(_ e: Expression) -> Expression { binary(.and, e) }
    /// `self OR e` on truthiness (see ``and(_:)``): true when either side is true, whatever the other; else
    /// MISSING if either side is MISSING, null if either is null, otherwise false.
    public func or(_ e: Expression) -> Expression { binary(.or, e) }
    /// Pattern match: `%` any run of characters, `_` one; ASCII letters match either case.
    public func like(_ pattern: Expression) -> Expression { binary(.like, pattern) }
    /// Regular-expression match (case-sensitive), as `REGEXP_LIKE(self, pattern)`.
    public func regex(_ pattern: Expression) -> Expression { Expression(.function("REGEXP_LIKE", [tree, pattern.tree])) }
    /// `self BETWEEN lower AND upper`: the same as `self >= lower AND self <= upper`, typed, bounds included.
    public func between(_ lower: Expression, and upper: Expression) -> Expression { Expression(.between(tree, lower: lower.tree, upper: upper.tree)) }
    /// `self IN (values...)`: true when ``equalTo(_:)`` holds for some value (typed: `1` is not in `["1"]`);
    /// an empty list gives false.
    public func `in`(_ values: [Expression]) -> Expression { Expression(.inList(tree, values.map(\.tree))) }
    /// `NOT (self IN (values...))`; see ``in(_:)``.
    public func notIn(_ values: [Expression]) -> Expression { Expression(.unary(.not, .inList(tree, values.map(\.tree)))) }
    /// `self IS NULL`: true only for JSON null, false for MISSING; never null or MISSING itself.
    public func isNull() -> Expression { Expression(.check(tree, .null, negated: false)) }
    /// `self IS NOT NULL`: true for MISSING and every non-null value.
    public func isNotNull() -> Expression { Expression(.check(tree, .null, negated: true)) }
    /// `self IS MISSING`: true only when there is no value (an absent property), false for JSON null.
    public func isMissing() -> Expression { Expression(.check(tree, .missing, negated: false)) }
    /// `self IS NOT MISSING`: true for JSON null and every other value.
    public func isNotMissing() -> Expression { Expression(.check(tree, .missing, negated: true)) }
    /// Neither null nor MISSING.
    public func isValued() -> Expression { Expression(.check(tree, .valued, negated: false)) }
    /// `self IS NOT VALUED`: true for null and MISSING.
    public func isNotValued() -> Expression { Expression(.check(tree, .valued, negated: true)) }
}

/// Document metadata for queries: `Meta.id`, `Meta.sequence`...; use
/// `.from(alias)` in joins.
public enum Meta {
    /// `meta().id`: the document ID, a string.
    public static let id = Expression(.meta(source: nil, .id))
    /// `meta().sequence`: the collection sequence of the document's current revision.
    public static let sequence = Expression(.meta(source: nil, .sequence))
    /// `meta().deleted`: always false, since queries skip deleted documents (MISSING for the unmatched side of
    /// a LEFT OUTER JOIN, as every meta property).
    public static let isDeleted = Expression(.meta(source: nil, .deleted))
    /// When the document expires, in milliseconds since 1970; MISSING when it does not.
    public static let expiration = Expression(.meta(source: nil, .expiration))
    /// `meta().revisionID`: the current revision ID (`<generation>-<digest>`).
    public static let revisionID = Expression(.meta(source: nil, .revisionID))
}

/// Functions usable in expressions.
public enum Function {
    private static func call(_ name: String, _ args: Expression...) -> Expression { Expression(.function(name, args.map(\.tree))) }

    /// Counts rows where the value is neither null nor MISSING; `count(Expression.all())` counts rows.
    public static func count(_ e: Expression) -> Expression {
        e.tree == .property(source: nil, path: []) ? Expression(.countAll) : call("COUNT", e)
    }
    /// `SUM(e)`, an aggregate: the total of the numeric values (others are skipped); null when there are none.
    public static func sum(_ e: Expression) -> Expression { call("SUM", e) }
    /// `AVG(e)`, an aggregate: the mean of the numeric values (others are skipped); null when there are none.
    public static func avg(_ e: Expression) -> Expression { call("AVG", e) }
    /// `MIN(e)`, an aggregate: the smallest value in collation order (booleans, numbers, strings, arrays,
    /// objects), null and MISSING skipped; null when nothing is left.
    public static func min(_ e: Expression) -> Expression { call("MIN", e) }
    /// `MAX(e)`, an aggregate: the largest value in collation order, null and MISSING skipped; null when
    /// nothing is left.
    public static func max(_ e: Expression) -> Expression { call("MAX", e) }
    /// `LOWER(e)`: the string in lower case (Unicode-aware); null for a non-string, MISSING for MISSING.
    public static func lower(_ e: Expression) -> Expression { call("LOWER", e) }
    /// `UPPER(e)`: the string in upper case (Unicode-aware); null for a non-string, MISSING for MISSING.
    public static func upper(_ e: Expression) -> Expression { call("UPPER", e) }
    /// `LENGTH(e)`: the string's length in Unicode code points; null for a non-string (use
    /// ``ArrayFunction/length(_:)`` for arrays), MISSING for MISSING.
    public static func length(_ e: Expression) -> Expression { call("LENGTH", e) }
    /// `TRIM(e)`: the string without leading and trailing spaces, tabs, CRs and LFs; null for a non-string.
    public static func trim(_ e: Expression) -> Expression { call("TRIM", e) }
    /// `LTRIM(e)`: the string without leading spaces, tabs, CRs and LFs; null for a non-string.
    public static func ltrim(_ e: Expression) -> Expression { call("LTRIM", e) }
    /// `RTRIM(e)`: the string without trailing spaces, tabs, CRs and LFs; null for a non-string.
    public static func rtrim(_ e: Expression) -> Expression { call("RTRIM", e) }
    /// True when the string contains `substring` (case-sensitive).
    public static func contains(_ e: Expression, substring: Expression) -> Expression { call("CONTAINS", e, substring) }
    /// `ABS(e)`: the absolute value. Like every numeric function: null for a non-number (or a result SQLite
    /// cannot compute), MISSING for MISSING.
    public static func abs(_ e: Expression) -> Expression { call("ABS", e) }
    /// `CEIL(e)`: the smallest integral value not below the number.
    public static func ceil(_ e: Expression) -> Expression { call("CEIL", e) }
    /// `FLOOR(e)`: the largest integral value not above the number.
    public static func floor(_ e: Expression) -> Expression { call("FLOOR", e) }
    /// `ROUND(e[, digits])`: the number rounded half away from zero to `digits` decimals (default 0; the
    /// digits are truncated to an integer, and a negative count acts as 0, as in SQLite).
    public static func round(_ e: Expression, digits: Expression? = nil) -> Expression {
        digits.map { call("ROUND", e, $0) } ?? call("ROUND", e)
    }
    /// `TRUNC(e)`: the number with its fraction dropped (toward zero).
    public static func trunc(_ e: Expression) -> Expression { call("TRUNC", e) }
    /// `SIGN(e)`: -1, 0 or 1 as the number is negative, zero or positive.
    public static func sign(_ e: Expression) -> Expression { call("SIGN", e) }
    /// `SQRT(e)`: the square root; null for a negative number.
    public static func sqrt(_ e: Expression) -> Expression { call("SQRT", e) }
    /// `POWER(base, exponent)`: `base` raised to `exponent`.
    public static func power(base: Expression, exponent: Expression) -> Expression { call("POWER", base, exponent) }
    /// `EXP(e)`: e raised to the number.
    public static func exp(_ e: Expression) -> Expression { call("EXP", e) }
    /// `LN(e)`: the natural logarithm; null for zero or a negative number.
    public static func ln(_ e: Expression) -> Expression { call("LN", e) }
    /// Base-10 logarithm.
    public static func log(_ e: Expression) -> Expression { call("LOG", e) }
    /// `SIN(e)`: the sine of an angle in radians.
    public static func sin(_ e: Expression) -> Expression { call("SIN", e) }
    /// `COS(e)`: the cosine of an angle in radians.
    public static func cos(_ e: Expression) -> Expression { call("COS", e) }
    /// `TAN(e)`: the tangent of an angle in radians.
    public static func tan(_ e: Expression) -> Expression { call("TAN", e) }
    /// `PI()`: π.
    public static func pi() -> Expression { call("PI") }
    /// `E()`: Euler's number.
    public static func e() -> Expression { call("E") }
}

/// Array functions.
public enum ArrayFunction {
    /// True when the array holds an element equal to `value`.
    public static func contains(_ array: Expression, value: Expression) -> Expression { Expression(.function("ARRAY_CONTAINS", [array.tree, value.tree])) }
    /// `ARRAY_LENGTH(array)`: the number of elements; null when the value is not an array, MISSING for MISSING.
    public static func length(_ array: Expression) -> Expression { Expression(.function("ARRAY_LENGTH", [array.tree])) }
}

/// `ANY` / `EVERY` over an array: `ArrayExpression.any(v).in(array).satisfies(condition on v)`.
public enum ArrayExpression {
    /// The loop variable, for use inside `satisfies`.
    public static func variable(_ name: String) -> Expression { Expression.property(name) }
    /// `ANY variable IN ... SATISFIES ... END`: true when at least one element satisfies the condition
    /// (false for an empty array).
    public static func any(_ variable: String) -> Quantified { Quantified(quantifier: .any, variable: variable) }
    /// `EVERY variable IN ... SATISFIES ... END`: true when every element satisfies the condition (true for
    /// an empty array); an element for which it is null or MISSING counts as failing.
    public static func every(_ variable: String) -> Quantified { Quantified(quantifier: .every, variable: variable) }

    /// An `ANY` or `EVERY` expression being built: give the array with ``in(_:)``, then the condition with
    /// ``satisfies(_:)``.
    public struct Quantified: Sendable {
        let quantifier: Quantifier
        let variable: String
        var collection: Expression?

        /// The array to range over.
        public func `in`(_ array: Expression) -> Quantified {
            var copy = self
            copy.collection = array
            return copy
        }

        /// The finished expression, testing `condition` (which refers to the element through
        /// ``ArrayExpression/variable(_:)``). Null when the ranged value is not an array, MISSING when it is
        /// MISSING (as it is when ``in(_:)`` was never called).
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
    /// The full-text index `name`, to ``match(_:)`` against.
    public static func index(_ name: String) -> FullTextExpression { FullTextExpression(name: name) }
    /// `MATCH(name, query)`: see ``FullTextFunction/match(indexName:query:)``.
    public func match(_ query: String) -> Expression { FullTextFunction.match(indexName: name, query: query) }
}
