/// The functions the query language knows, with their arities, so both front
/// ends reject an unknown name or a wrong argument count before compiling.
enum FunctionCatalog {
    struct Entry {
        let arity: ClosedRange<Int>
        let isAggregate: Bool
    }

    static let entries: [String: Entry] = {
        var e: [String: Entry] = [:]
        for name in ["COUNT", "SUM", "AVG", "MIN", "MAX"] { e[name] = Entry(arity: 1...1, isAggregate: true) }
        for name in ["LOWER", "UPPER", "LENGTH", "TRIM", "LTRIM", "RTRIM", "ARRAY_LENGTH",
                     "ABS", "CEIL", "FLOOR", "TRUNC", "SIGN", "SQRT", "EXP", "LN", "LOG", "SIN", "COS", "TAN",
                     "ASIN", "ACOS", "ATAN", "DEGREES", "RADIANS", "TYPE"] {
            e[name] = Entry(arity: 1...1, isAggregate: false)
        }
        for name in ["CONTAINS", "ARRAY_CONTAINS", "POWER", "REGEXP_LIKE", "ATAN2"] { e[name] = Entry(arity: 2...2, isAggregate: false) }
        e["ROUND"] = Entry(arity: 1...2, isAggregate: false)
        e["PI"] = Entry(arity: 0...0, isAggregate: false)
        e["E"] = Entry(arity: 0...0, isAggregate: false)
        return e
    }()

    /// Checks a call: the name must be known and the argument count fit.
    static func validate(_ name: String, argumentCount: Int) throws(StoreError) {
        guard let entry = entries[name] else {
            throw .invalidQuery("unknown function '\(name)'; known functions: \(entries.keys.sorted().joined(separator: ", "))")
        }
        guard entry.arity.contains(argumentCount) else {
            let expected = entry.arity.count == 1 ? "\(entry.arity.lowerBound)" : "\(entry.arity.lowerBound) to \(entry.arity.upperBound)"
            throw .invalidQuery("function \(name) takes \(expected) argument(s), got \(argumentCount)")
        }
    }

    static func isAggregate(_ name: String) -> Bool { entries[name]?.isAggregate ?? false }
}

extension QueryExpression {
    /// True when the expression contains an aggregate call (outside ANY/EVERY conditions).
    var containsAggregate: Bool {
        switch self {
        case .countAll: return true
        case .function(let name, let args): return FunctionCatalog.isAggregate(name) || args.contains { $0.containsAggregate }
        case .literal, .missing, .property, .meta, .parameter, .rank: return false
        case .array(let items): return items.contains { $0.containsAggregate }
        case .unary(_, let e): return e.containsAggregate
        case .binary(_, let a, let b): return a.containsAggregate || b.containsAggregate
        case .between(let a, let l, let u): return a.containsAggregate || l.containsAggregate || u.containsAggregate
        case .inList(let a, let items): return a.containsAggregate || items.contains { $0.containsAggregate }
        case .check(let e, _, _): return e.containsAggregate
        case .caseWhen(let s, let branches, let otherwise):
            return s?.containsAggregate == true || otherwise?.containsAggregate == true
                || branches.contains { $0.when.containsAggregate || $0.then.containsAggregate }
        case .quantified(_, _, let coll, _): return coll.containsAggregate
        case .match(_, let p): return p.containsAggregate
        }
    }
}
