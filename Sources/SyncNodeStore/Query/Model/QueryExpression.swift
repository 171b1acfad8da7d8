/// The query language's expression tree, shared by the SQL++ parser and the
/// ``QueryBuilder``; ``QueryCompiler`` turns it into SQLite SQL.
indirect enum QueryExpression: Sendable, Hashable {
    /// A constant: null, a boolean, a number, a string, or an array or object of constants.
    case literal(DocumentValue)
    /// The MISSING constant.
    case missing
    /// A property path. `source` names a FROM/JOIN alias; when nil, the
    /// first path component is tried as a variable, then as an alias, and
    /// otherwise the path belongs to the main (FROM) source.
    case property(source: String?, path: [PathComponent])
    /// `meta(source).<property>`.
    case meta(source: String?, MetaProperty)
    /// `$name`.
    case parameter(String)
    /// An array built from expressions: `[a, b, c]`.
    case array([QueryExpression])
    case unary(UnaryOperator, QueryExpression)
    case binary(BinaryOperator, QueryExpression, QueryExpression)
    case between(QueryExpression, lower: QueryExpression, upper: QueryExpression)
    /// `x IN (a, b, c)` / `x IN [a, b, c]`.
    case inList(QueryExpression, [QueryExpression])
    /// `x IS [NOT] NULL | MISSING | VALUED`.
    case check(QueryExpression, Check, negated: Bool)
    /// A function call; `name` is upper-cased. `COUNT(*)` is `countAll`.
    case function(String, [QueryExpression])
    case countAll
    /// `CASE [subject] WHEN .. THEN .. [ELSE ..] END`.
    case caseWhen(subject: QueryExpression?, branches: [CaseBranch], otherwise: QueryExpression?)
    /// `ANY|EVERY variable IN collection SATISFIES condition END`.
    case quantified(Quantifier, variable: String, in: QueryExpression, satisfies: QueryExpression)
    /// `MATCH(index, pattern)`: full-text search on a full-text index.
    case match(index: String, pattern: QueryExpression)
    /// `RANK(index)`: the relevance of the current row for the index's MATCH (higher is better).
    case rank(index: String)
}

enum PathComponent: Sendable, Hashable {
    case key(String)
    case index(Int)
}

enum MetaProperty: String, Sendable, Hashable, CaseIterable {
    case id, sequence, deleted, expiration, revisionID
}

enum UnaryOperator: Sendable, Hashable {
    case not, negate
}

enum BinaryOperator: String, Sendable, Hashable {
    case add = "+", subtract = "-", multiply = "*", divide = "/", modulo = "%", concat = "||"
    case equal = "=", notEqual = "!=", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    case and = "AND", or = "OR"
    case like = "LIKE"

    var isComparison: Bool {
        switch self {
        case .equal, .notEqual, .less, .lessOrEqual, .greater, .greaterOrEqual: return true
        default: return false
        }
    }
}

enum Check: String, Sendable, Hashable {
    case null = "NULL", missing = "MISSING", valued = "VALUED"
}

enum Quantifier: String, Sendable, Hashable {
    case any = "ANY", every = "EVERY"
}

struct CaseBranch: Sendable, Hashable {
    var when: QueryExpression
    var then: QueryExpression
}

extension PathComponent {
    /// Parses a dotted path as the builder API writes it: `geo.alt`,
    /// `likes[0]`, with `\.` for a dot inside a name.
    static func parse(dotted: String) -> [PathComponent] {
        var components: [PathComponent] = []
        var current = ""
        var afterIndex = false
        var iterator = dotted.makeIterator()
        while let c = iterator.next() {
            switch c {
            case "\\":
                if let next = iterator.next() { current.append(next) }
            case ".":
                if !afterIndex { components.append(.key(current)) }
                current = ""
                afterIndex = false
            case "[":
                if !current.isEmpty { components.append(.key(current)) }
                var digits = ""
                while let d = iterator.next(), d != "]" { digits.append(d) }
                components.append(Int(digits).map(PathComponent.index) ?? .key("[\(digits)]"))
                current = ""
                afterIndex = true
            default:
                current.append(c)
                afterIndex = false
            }
        }
        if !afterIndex { components.append(.key(current)) }
        return components
    }
}
