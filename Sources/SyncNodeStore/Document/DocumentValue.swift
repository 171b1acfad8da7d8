import Foundation

/// A value stored in a document: the JSON data model plus blobs.
///
/// Every property of a ``Document`` is one of these. The typed accessors
/// (`string(forKey:)`, `int(forKey:)`, ...) convert from it, so most code never
/// touches this enum directly; it is public for code that wants to switch
/// over the exact stored shape (the sync layer, generic tools).
public enum DocumentValue: Sendable, Hashable {
    /// JSON `null`.
    case null
    /// JSON `true` or `false`.
    case bool(Bool)
    /// An integral JSON number that fits in 64 bits; integral numbers written with a fraction or exponent
    /// (`2.0`, `1e3`) are stored this way too when their magnitude is below 9e15.
    case int(Int64)
    /// Any other JSON number; always finite.
    case double(Double)
    /// A JSON string.
    case string(String)
    /// A JSON array.
    case array([DocumentValue])
    /// A JSON object (other than blob metadata, which reads as ``blob(_:)``).
    case dictionary([String: DocumentValue])
    /// A blob. In the stored body it is its metadata dictionary (`@type`, `digest`, `length`, `content_type`).
    case blob(Blob)
}

extension DocumentValue {
    /// The class of boolean NSNumbers (CFBoolean), which `JSONSerialization` gives for true and false.
    private static let booleanNumberType = type(of: NSNumber(value: true))

    /// An NSNumber as what it holds: a boolean only when it is one (CFBoolean), a floating-point
    /// number when its type is, else an integer.
    private static func value(of n: NSNumber) throws -> DocumentValue {
        if type(of: n) == booleanNumberType { return .bool(n.boolValue) }
        switch UInt8(bitPattern: n.objCType.pointee) {
        case UInt8(ascii: "f"), UInt8(ascii: "d"):
            return try .number(n.doubleValue)
        case UInt8(ascii: "Q"), UInt8(ascii: "L"):
            guard let i = Int64(exactly: n.uint64Value) else {
                throw StoreError.invalidValue("integer \(n.uint64Value) does not fit in 64 signed bits")
            }
            return .int(i)
        default:
            return .int(n.int64Value)
        }
    }

    /// Converts a Foundation-typed value (as `JSONSerialization` produces, or
    /// as an app writes literals) into a document value.
    ///
    /// nil and `NSNull` become ``null``; a `Date` becomes its ISO-8601 string; `Data` becomes a blob of
    /// type `application/octet-stream`; integral floating-point values become ``int(_:)``.
    /// - Throws: ``StoreError/invalidValue(_:)`` for a type that has no JSON
    ///   form (a custom class, `Double.nan`, an unsigned integer above `Int64.max`, ...).
    public init(any value: Any?) throws {
        guard let value else { self = .null; return }
        switch value {
        case let v as DocumentValue: self = v
        case is NSNull: self = .null
        case let v as String: self = .string(v)
        case let v as Substring: self = .string(String(v))
        // Before Bool and Int: an NSNumber (what JSONSerialization gives) casts to both, so 1 and
        // 1.0 would read as true. Native Swift values are not NSNumber instances.
        case let n as NSNumber where type(of: value) is NSNumber.Type: self = try Self.value(of: n)
        case let v as Bool: self = .bool(v)
        case let v as Int: self = .int(Int64(v))
        case let v as Int64: self = .int(v)
        case let v as Int32: self = .int(Int64(v))
        case let v as Int16: self = .int(Int64(v))
        case let v as Int8: self = .int(Int64(v))
        case let v as UInt8: self = .int(Int64(v))
        case let v as UInt16: self = .int(Int64(v))
        case let v as UInt32: self = .int(Int64(v))
        case let v as UInt:
            guard let i = Int64(exactly: v) else { throw StoreError.invalidValue("integer \(v) does not fit in 64 signed bits") }
            self = .int(i)
        case let v as UInt64:
            guard let i = Int64(exactly: v) else { throw StoreError.invalidValue("integer \(v) does not fit in 64 signed bits") }
            self = .int(i)
        case let v as Double: self = try .number(v)
        case let v as Float: self = try .number(v)
        case let v as Decimal: self = try .number(v)
        case let v as Date: self = .string(ISODate.string(from: v))
        case let v as Blob: self = .blob(v)
        case let v as Data: self = .blob(Blob(contentType: "application/octet-stream", data: v))
        case let v as DictionaryObject: self = .dictionary(v.storage)
        case let v as ArrayObject: self = .array(v.storage)
        case let v as MutableDictionary: self = .dictionary(v.snapshot())
        case let v as MutableArray: self = .array(v.snapshot())
        case let v as [String: Any]: self = .dictionary(try v.mapValues { try DocumentValue(any: $0) })
        case let v as [Any]: self = .array(try v.map { try DocumentValue(any: $0) })
        case let v as NSNumber: self = try .number(v.doubleValue)
        default:
            throw StoreError.invalidValue("values of type \(type(of: value)) cannot be stored in a document")
        }
    }

    /// A number, stored as an integer when it is integral and fits (JSON does not tell them apart).
    static func number(_ d: Double) throws -> DocumentValue {
        guard d.isFinite else { throw StoreError.invalidValue("\(d) is not a JSON number") }
        if d == d.rounded(.towardZero), abs(d) < 9.0e15 { return .int(Int64(d)) }
        return .double(d)
    }

    /// A float as the decimal it prints as (0.1 stays 0.1, not 0.10000000149011612).
    static func number(_ f: Float) throws -> DocumentValue {
        try number(f.isFinite ? Double("\(f)") ?? Double(f) : Double(f))
    }

    /// A decimal through its text: `NSDecimalNumber.doubleValue` is off in the
    /// last digits (19.99 -> 19.990000000000002).
    static func number(_ d: Decimal) throws -> DocumentValue {
        try number(Double("\(d)") ?? NSDecimalNumber(decimal: d).doubleValue)
    }

    /// The Foundation form: `String`, `Int`, `Double`, `Bool`, `NSNull`,
    /// `[Any]`, `[String: Any]`, or ``Blob``.
    public var anyValue: Any {
        switch self {
        case .null: return NSNull()
        case .bool(let b): return b
        case .int(let i): return Int(i)
        case .double(let d): return d
        case .string(let s): return s
        case .array(let a): return a.map(\.anyValue)
        case .dictionary(let d): return d.mapValues(\.anyValue)
        case .blob(let b): return b
        }
    }

    /// The string, nil for any other kind of value.
    package var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    var int64Value: Int64 {
        switch self {
        case .int(let i): return i
        case .double(let d): return d.isFinite && abs(d) < 9.2e18 ? Int64(d) : 0
        case .bool(let b): return b ? 1 : 0
        default: return 0
        }
    }

    var doubleValue: Double {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .bool(let b): return b ? 1 : 0
        default: return 0
        }
    }

    /// CBL's truthiness: false for null, false, 0; true for anything else.
    var booleanValue: Bool {
        switch self {
        case .null: return false
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .double(let d): return d != 0
        default: return true
        }
    }

    var blobValue: Blob? {
        switch self {
        case .blob(let b): return b
        default: return nil
        }
    }
}

extension DocumentValue {
    /// Parses JSON text (any JSON value, not only an object).
    /// - Throws: ``StoreError/invalidJSON(_:)`` naming the byte offset of the problem, also for a
    ///   number out of range or nesting deeper than 256 levels.
    public init(json: String) throws {
        self = try JSONParser.parse(json)
    }

    /// The value as canonical JSON text (sorted keys, no whitespace).
    public func toJSON() -> String { JSONWriter.string(self) }
}

extension DocumentValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral, ExpressibleByNilLiteral
{
    /// A ``string(_:)`` literal.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An ``int(_:)`` literal.
    public init(integerLiteral value: Int64) { self = .int(value) }
    /// A number literal: ``int(_:)`` when integral (`2.0`), ``double(_:)`` otherwise, ``null`` when not finite.
    public init(floatLiteral value: Double) { self = (try? .number(value)) ?? .null }
    /// A ``bool(_:)`` literal.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An ``array(_:)`` literal.
    public init(arrayLiteral elements: DocumentValue...) { self = .array(elements) }
    /// A ``dictionary(_:)`` literal; for a repeated key the last value wins.
    public init(dictionaryLiteral elements: (String, DocumentValue)...) {
        self = .dictionary(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
    /// `nil` as a literal is ``null``.
    public init(nilLiteral: ()) { self = .null }
}

extension DocumentValue {
    /// The member `key` of a dictionary value; nil for a missing key or another kind of value.
    public subscript(_ key: String) -> DocumentValue? {
        if case .dictionary(let d) = self { return d[key] }
        return nil
    }
}
