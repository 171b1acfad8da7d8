/// The query functions, compiled to SQLite's own or to the store's registered ones.
extension ExpressionCompiler {
    mutating func function(_ name: String, _ arguments: [QueryExpression]) throws(StoreError) -> SQLValue {
        try FunctionCatalog.validate(name, argumentCount: arguments.count)
        var args: [SQLValue] = []
        for argument in arguments { args.append(try compile(argument)) }
        func number(_ sql: String) -> SQLValue { .computed(sql, kind: .number, from: args) }
        let a = args.first
        switch name {
        case "COUNT":
            return SQLValue(sql: "count(\(args[0].sql))", tag: "'integer'", kind: .number, canBeMissing: false, canBeNull: false)
        case "SUM", "AVG":
            let sql = "\(name.lowercased())(\(args[0].asNumber))"
            return SQLValue(sql: sql, tag: "(CASE WHEN \(sql) IS NULL THEN 'null' ELSE \(SQLValue.Kind.number.validTag(sql)) END)",
                            kind: .number, canBeMissing: false, canBeNull: true)
        case "MIN", "MAX":
            let v = args[0]
            if v.kind == .number || v.kind == .string {
                let sql = "\(name.lowercased())(\(v.sql))"
                return SQLValue(sql: sql, tag: "(CASE WHEN \(sql) IS NULL THEN 'null' ELSE \(v.kind.validTag(sql)) END)",
                                kind: v.kind, canBeMissing: false, canBeNull: true)
            }
            let json = "sn_\(name.lowercased())(\(v.tag), \(v.sql))"
            return SQLValue(sql: "json_extract(\(json), '$')", tag: "coalesce(json_type(\(json)), 'null')", kind: .dynamic,
                            canBeMissing: false, canBeNull: true, location: (json, "'$'"))
        case "LOWER", "UPPER":
            return .computed("sn_\(name.lowercased())(\(a!.asString))", kind: .string, from: args)
        case "LENGTH":
            return number("length(\(a!.asString))")
        case "TRIM", "LTRIM", "RTRIM":
            return .computed("\(name.lowercased())(\(a!.asString), char(32, 9, 10, 13))", kind: .string, from: args)
        case "CONTAINS":
            return .computed("(instr(\(args[0].asString), \(args[1].asString)) > 0)", kind: .boolean, from: args)
        case "REGEXP_LIKE":
            return .computed("sn_regexp_like(\(args[0].asString), \(args[1].asString))", kind: .boolean, from: args)
        case "TYPE":
            // Never MISSING or null itself: the type's name, "missing" included (Mango's $type and ranges use it).
            let sql = "(CASE \(a!.tag) WHEN 'null' THEN 'null' WHEN 'true' THEN 'boolean' WHEN 'false' THEN 'boolean' "
                + "WHEN 'integer' THEN 'number' WHEN 'real' THEN 'number' WHEN 'text' THEN 'string' "
                + "WHEN 'array' THEN 'array' WHEN 'object' THEN 'object' ELSE 'missing' END)"
            return SQLValue(sql: sql, tag: "'text'", kind: .string, canBeMissing: false, canBeNull: false)
        case "ARRAY_LENGTH":
            return number("(CASE WHEN \(a!.tag) = 'array' THEN json_array_length(\(a!.sql)) END)")
        case "ARRAY_CONTAINS":
            let array = args[0], value = args[1]
            guard array.kind == .dynamic else {
                return .computed("(CASE WHEN \(array.sql) IS NULL OR \(value.sql) IS NULL THEN NULL END)", kind: .boolean, from: args)
            }
            let location = array.location ?? (array.sql, "'$'")
            nextEach += 1
            let each = "e\(nextEach)"
            let element = SQLValue(sql: "\(each).value", tag: "\(each).type", kind: .dynamic, canBeMissing: false, canBeNull: true)
            let equal = compare(.equal, element, value).sql
            let sql = "(CASE WHEN \(array.tag) = 'array' AND \(value.sql) IS NOT NULL THEN EXISTS (SELECT 1 FROM json_each(\(location.json), \(location.path)) AS \(each) WHERE \(equal)) END)"
            return .computed(sql, kind: .boolean, from: args)
        case "ROUND":
            return number(args.count == 2 ? "round(\(args[0].asNumber), CAST(\(args[1].asNumber) AS INTEGER))" : "round(\(a!.asNumber))")
        case "POWER": return number("pow(\(args[0].asNumber), \(args[1].asNumber))")
        case "ATAN2": return number("atan2(\(args[0].asNumber), \(args[1].asNumber))")
        case "LOG": return number("log10(\(a!.asNumber))")
        case "PI": return SQLValue(sql: "pi()", tag: "'real'", kind: .number, canBeMissing: false, canBeNull: false)
        case "E": return SQLValue(sql: "exp(1)", tag: "'real'", kind: .number, canBeMissing: false, canBeNull: false)
        default:
            // ABS CEIL FLOOR TRUNC SIGN SQRT EXP LN SIN COS TAN ASIN ACOS ATAN DEGREES RADIANS: SQLite's own.
            return number("\(name.lowercased())(\(a!.asNumber))")
        }
    }
}
