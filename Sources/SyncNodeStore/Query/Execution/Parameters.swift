import Foundation

/// Values for a query's `$name` parameters.
///
/// ```swift
/// let query = try db.createQuery("SELECT name FROM hotels WHERE city = $city")
/// query.parameters = Parameters().setString("Paris", forName: "city")
/// ```
/// A parameter left unset reads as MISSING. Names may be given with or
/// without the `$` they have in the query (`"city"` or `"$city"`).
public struct Parameters: Sendable, Hashable {
    private(set) var values: [String: DocumentValue] = [:]

    public init() {}

    /// When a name is given both ways (`"city"` and `"$city"`), the one without `$` wins.
    public init(_ values: [String: DocumentValue]) {
        for (name, value) in values where name.hasPrefix("$") { self.values[Self.bare(name)] = value }
        for (name, value) in values where !name.hasPrefix("$") { self.values[name] = value }
    }

    /// The value set for `name`.
    public func value(forName name: String) -> DocumentValue? { values[Self.bare(name)] }

    private static func bare(_ name: String) -> String {
        name.hasPrefix("$") ? String(name.dropFirst()) : name
    }

    /// Sets a value of any JSON-compatible type (nil means null).
    /// - throws: ``StoreError/invalidValue(_:)`` for a value with no JSON form.
    public func setValue(_ value: Any?, forName name: String) throws -> Parameters {
        with(name, try DocumentValue(any: value))
    }

    public func setValue(_ value: DocumentValue, forName name: String) -> Parameters { with(name, value) }
    public func setString(_ value: String?, forName name: String) -> Parameters { with(name, value.map(DocumentValue.string) ?? .null) }
    public func setInt(_ value: Int, forName name: String) -> Parameters { with(name, .int(Int64(value))) }
    public func setInt64(_ value: Int64, forName name: String) -> Parameters { with(name, .int(value)) }
    public func setDouble(_ value: Double, forName name: String) -> Parameters { with(name, (try? .number(value)) ?? .null) }
    public func setBoolean(_ value: Bool, forName name: String) -> Parameters { with(name, .bool(value)) }
    public func setDate(_ value: Date?, forName name: String) -> Parameters { with(name, value.map { .string(ISODate.string(from: $0)) } ?? .null) }
    public func setArray(_ value: [DocumentValue], forName name: String) -> Parameters { with(name, .array(value)) }
    public func setDictionary(_ value: [String: DocumentValue], forName name: String) -> Parameters { with(name, .dictionary(value)) }

    private func with(_ name: String, _ value: DocumentValue) -> Parameters {
        var copy = self
        copy.values[Self.bare(name)] = value
        return copy
    }
}
