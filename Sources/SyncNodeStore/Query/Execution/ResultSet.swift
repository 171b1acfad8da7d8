/// The rows a query returned, in order. Iterate it, or take ``allResults()``.
///
/// Two result sets are equal when their columns and the documents and
/// revisions their rows come from are: a live query tells of a saved
/// document even when the columns it selects did not change, so models
/// decoded from its rows carry the revision they would save against.
public struct ResultSet: Sequence, Sendable, Equatable {
    let layout: ResultLayout
    /// Each row: the result columns, then `(id, rev)` of each source when known.
    let rows: [[DocumentValue?]]

    /// The result column names, in SELECT order.
    public var columnNames: [String] { layout.columnNames }

    /// The rows in order; a result set can be iterated any number of times.
    public func makeIterator() -> some IteratorProtocol<Result> {
        rows.lazy.map { Result(layout: layout, values: $0) }.makeIterator()
    }

    /// Every row.
    public func allResults() -> [Result] { Array(self) }

    /// The number of rows.
    public var count: Int { rows.count }
}

/// What the columns of a query's rows are.
package struct ResultLayout: Sendable, Equatable {
    let columnNames: [String]
    /// For each column, the source whose whole document (`* AS data`) or
    /// whose ID (`meta().id`) it holds.
    let columnSources: [Int?]
    /// How many sources' `(id, rev)` follow the columns in each row: all of
    /// them when each row reads one document per source, none when the query
    /// merges rows (DISTINCT, GROUP BY, aggregates).
    let originCount: Int
}

/// One row of a ``ResultSet``: read columns by name (``DictionaryProtocol``)
/// or by position (``ArrayProtocol``). A column whose value is MISSING is
/// absent: `contains(key:)` is false and `toDictionary()` leaves it out.
public struct Result: DictionaryProtocol, ArrayProtocol, Sendable, Equatable {
    let layout: ResultLayout
    let values: [DocumentValue?]

    /// The number of columns (MISSING ones included).
    public var count: Int { layout.columnNames.count }

    /// The column names, in SELECT order.
    public var columnNames: [String] { layout.columnNames }

    /// The names of the columns that have a value, in SELECT order.
    public var keys: [String] { zip(layout.columnNames, values).compactMap { $1 == nil ? nil : $0 } }

    /// The value of the column named `key` (the last one, if several share the name); nil when there is no
    /// such column or its value is MISSING.
    public func documentValue(forKey key: String) -> DocumentValue? {
        guard let i = layout.columnNames.lastIndex(of: key) else { return nil }
        return values[i]
    }

    /// The value of column `index` in SELECT order; nil when it is out of range or the value is MISSING.
    public func documentValue(at index: Int) -> DocumentValue? {
        (0..<count).contains(index) ? values[index] : nil
    }

    /// The row as canonical JSON text (sorted keys), MISSING columns left out.
    public func toJSON() -> String {
        JSONWriter.string(object: members)
    }

    /// The columns that have a value, by name.
    var members: [String: DocumentValue] {
        var dict: [String: DocumentValue] = [:]
        for (name, value) in zip(layout.columnNames, values) { if let value { dict[name] = value } }
        return dict
    }

    /// The document and revision the row read from the query's `source`-th
    /// data source; nil when unknown (aggregates, DISTINCT) or unmatched (outer join).
    func origin(source: Int) -> (id: String, revisionID: String)? {
        guard source < layout.originCount else { return nil }
        let i = count + source * 2
        guard case .string(let id)? = values[i], case .string(let rev)? = values[i + 1] else { return nil }
        return (id, rev)
    }

    /// The document a one-source query's row came from (for error messages).
    var singleSourceDocumentID: String? { layout.originCount == 1 ? origin(source: 0)?.id : nil }

    /// The document and revision column `name` stands for (a `*` or `meta().id` column).
    func origin(column name: String) -> (id: String, revisionID: String)? {
        guard let i = layout.columnNames.lastIndex(of: name), let source = layout.columnSources[i] else { return nil }
        return origin(source: source)
    }
}
