/// The rows a query returned, in order. Iterate it, or take ``allResults()``.
public struct ResultSet: Sequence, Sendable, Equatable {
    /// The result column names, in SELECT order.
    public let columnNames: [String]
    let rows: [[DocumentValue?]]

    public func makeIterator() -> some IteratorProtocol<Result> {
        rows.lazy.map { Result(columnNames: columnNames, values: $0) }.makeIterator()
    }

    /// Every row.
    public func allResults() -> [Result] { Array(self) }

    /// The number of rows.
    public var count: Int { rows.count }
}

/// One row of a ``ResultSet``: read columns by name (``DictionaryProtocol``)
/// or by position (``ArrayProtocol``). A column whose value is MISSING is
/// absent: `contains(key:)` is false and `toDictionary()` leaves it out.
public struct Result: DictionaryProtocol, ArrayProtocol, Sendable, Equatable {
    let columnNames: [String]
    let values: [DocumentValue?]

    /// The number of columns (MISSING ones included).
    public var count: Int { values.count }

    /// The names of the columns that have a value, in SELECT order.
    public var keys: [String] { zip(columnNames, values).compactMap { $1 == nil ? nil : $0 } }

    public func documentValue(forKey key: String) -> DocumentValue? {
        guard let i = columnNames.lastIndex(of: key) else { return nil }
        return values[i]
    }

    public func documentValue(at index: Int) -> DocumentValue? {
        values.indices.contains(index) ? values[index] : nil
    }

    /// The row as canonical JSON text (sorted keys), MISSING columns left out.
    public func toJSON() -> String {
        var dict: [String: DocumentValue] = [:]
        for (name, value) in zip(columnNames, values) { if let value { dict[name] = value } }
        return JSONWriter.string(object: dict)
    }
}
