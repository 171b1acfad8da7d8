/// Writes the expression tree back as SQL++ text (fully parenthesized), for
/// `Query.description` and for builder expressions stored in index definitions.
enum SQLPPRenderer {
    static func render(_ s: SelectStatement) -> String {
        var out = "SELECT " + (s.distinct ? "DISTINCT " : "")
        out += s.results.map { item -> String in
            switch item {
            case .all(let source, let alias): return (source.map { identifier($0) + ".*" } ?? "*") + (alias.map { " AS " + identifier($0) } ?? "")
            case .expression(let e, let alias): return render(e) + (alias.map { " AS " + identifier($0) } ?? "")
            }
        }.joined(separator: ", ")
        out += " FROM " + source(s.from)
        for join in s.joins {
            out += " \(join.kind.rawValue) " + source(join.source) + (join.on.map { " ON " + render($0) } ?? "")
        }
        if let w = s.whereClause { out += " WHERE " + render(w) }
        if !s.groupBy.isEmpty { out += " GROUP BY " + s.groupBy.map(render).joined(separator: ", ") }
        if let h = s.having { out += " HAVING " + render(h) }
        if !s.orderBy.isEmpty { out += " ORDER BY " + s.orderBy.map { render($0.expression) + ($0.descending ? " DESC" : "") }.joined(separator: ", ") }
        if let l = s.limit { out += " LIMIT " + render(l) }
        if let o = s.offset { out += " OFFSET " + render(o) }
        return out
    }

    private static func source(_ spec: SourceSpec) -> String {
        let name: String
        switch spec.collection {
        case .named(let scope, let n): name = (scope.map { identifier($0) + "." } ?? "") + identifier(n)
        case .collection(let c): name = identifier(c.scopeName) + "." + identifier(c.name)
        }
        return name + (spec.alias.map { " AS " + identifier($0) } ?? "")
    }

    static func identifier(_ name: String) -> String { "`" + name.replacingOccurrences(of: "`", with: "``") + "`" }

    /// A builder property path (`geo.alt`) as SQL++.
    static func path(_ dotted: String) -> String { render(.property(source: nil, path: PathComponent.parse(dotted: dotted))) }

    static func render(_ e: QueryExpression) -> String {
        switch e {
        case .literal(let v): return literal(v)
        case .missing: return "MISSING"
        case .property(let source, let path):
            var out = source.map(identifier) ?? ""
            for component in path {
                switch component {
                case .key(let k): out += (out.isEmpty ? "" : ".") + identifier(k)
                case .index(let i): out += "[\(i)]"
                }
            }
            return out.isEmpty ? "*" : out
        case .meta(let source, let p): return "meta(\(source.map(identifier) ?? "")).\(p.rawValue)"
        case .parameter(let name): return "$" + name
        case .array(let items): return "[" + items.map(render).joined(separator: ", ") + "]"
        case .unary(.not, let a): return "(NOT \(render(a)))"
        case .unary(.negate, let a): return "(-\(render(a)))"
        case .binary(let op, let a, let b): return "(\(render(a)) \(op.rawValue) \(render(b)))"
        case .between(let a, let l, let u): return "(\(render(a)) BETWEEN \(render(l)) AND \(render(u)))"
        case .inList(let a, let items): return "(\(render(a)) IN (\(items.map(render).joined(separator: ", "))))"
        case .check(let a, let c, let negated): return "(\(render(a)) IS \(negated ? "NOT " : "")\(c.rawValue))"
        case .function(let name, let args): return "\(name)(\(args.map(render).joined(separator: ", ")))"
        case .countAll: return "COUNT(*)"
        case .caseWhen(let subject, let branches, let otherwise):
            var out = "CASE" + (subject.map { " " + render($0) } ?? "")
            for b in branches { out += " WHEN \(render(b.when)) THEN \(render(b.then))" }
            return out + (otherwise.map { " ELSE " + render($0) } ?? "") + " END"
        case .quantified(let q, let v, let coll, let cond):
            return "(\(q.rawValue) \(identifier(v)) IN \(render(coll)) SATISFIES \(render(cond)) END)"
        case .match(let index, let pattern): return "MATCH(\(identifier(index)), \(render(pattern)))"
        case .rank(let index): return "RANK(\(identifier(index)))"
        }
    }

    private static func literal(_ v: DocumentValue) -> String {
        switch v {
        case .null: return "NULL"
        case .bool(let b): return b ? "TRUE" : "FALSE"
        case .int(let i): return i < 0 ? "(\(i))" : "\(i)"
        case .double(let d): return d < 0 ? "(\(d))" : "\(d)"
        case .string(let s): return SQLValue.quote(s)
        case .array(let items): return "[" + items.map(literal).joined(separator: ", ") + "]"
        case .dictionary, .blob: return SQLValue.quote(v.toJSON())
        }
    }
}
