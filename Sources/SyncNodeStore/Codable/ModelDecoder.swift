import Foundation

/// Where a decoded model comes from: its ``DocumentID`` and error messages need it.
struct ModelSource {
    /// The document and the revision it was read at, when known.
    var document: (id: String, base: DocumentIdentity.Base)?
    /// The query row the model is part of (its `id` column names the document
    /// when the row does not say which document it came from).
    var row: Result?

    static func document(_ d: Document) -> ModelSource {
        ModelSource(document: (d.id, d.revisionID.map { .revision($0) } ?? .none), row: nil)
    }
}

/// Decodes `Decodable` models straight from stored values (no JSON text).
///
/// Strict about types (a string is not a number), lenient about absence:
/// a missing key decodes as nil for optionals, as usual.
final class ModelDecoder: Decoder {
    let value: DocumentValue
    let codingPath: [any CodingKey]
    let source: ModelSource
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(value: DocumentValue, codingPath: [any CodingKey], source: ModelSource) {
        self.value = value
        self.codingPath = codingPath
        self.source = source
    }

    /// Decodes `type` from `value`, turning any failure into
    /// ``StoreError/decodingFailed(type:documentID:keyPath:reason:)``.
    static func decode<T: Decodable>(_ type: T.Type, from value: DocumentValue, source: ModelSource) throws -> T {
        let decoder = ModelDecoder(value: value, codingPath: [], source: source)
        do {
            return try decoder.unbox(value, as: type, path: [])
        } catch let error as DecodingError {
            let (path, reason) = Self.describe(error)
            let documentID = source.document?.id ?? source.row?.singleSourceDocumentID
            throw StoreError.decodingFailed(type: "\(type)", documentID: documentID, keyPath: path, reason: reason)
        }
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .dictionary(let members) = value else { throw mismatch([String: Any].self, value, path: codingPath) }
        return KeyedDecodingContainer(KeyedContainer<Key>(decoder: self, members: members))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let elements) = value else { throw mismatch([Any].self, value, path: codingPath) }
        return UnkeyedContainer(decoder: self, elements: elements)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { SingleValueContainer(decoder: self) }

    /// The identity for a top-level ``DocumentID`` property.
    func documentIdentity() -> DocumentIdentity {
        if let (id, base) = source.document { return DocumentIdentity(id: id, base: base) }
        // A query row: the column named like the property (`meta().id AS id`).
        let key = codingPath.last?.stringValue ?? "id"
        if let (id, rev) = source.row?.origin(column: key) { return DocumentIdentity(id: id, base: .revision(rev)) }
        if case .string(let id) = value { return DocumentIdentity(id: id, base: .current) }
        if case .string(let id)? = source.row?.documentValue(forKey: key) { return DocumentIdentity(id: id, base: .current) }
        return DocumentIdentity(id: nil, base: .none)
    }

    // MARK: - Values

    func unbox<T: Decodable>(_ value: DocumentValue, as type: T.Type, path: @autoclosure () -> [any CodingKey]) throws -> T {
        // The common leaves, without a decoder each (arrays of strings...).
        switch value {
        case .string(let s) where T.self == String.self: return try Self.cast(s, path())
        case .int(let i) where T.self == Int.self: return try Self.cast(Int(i), path())
        case .double(let d) where T.self == Double.self: return try Self.cast(d, path())
        case .int(let i) where T.self == Double.self: return try Self.cast(Double(i), path())
        case .bool(let b) where T.self == Bool.self: return try Self.cast(b, path())
        default: break
        }
        let path = path()
        if T.self == Date.self {
            guard case .string(let s) = value, let date = ISODate.date(from: s) else {
                throw mismatch(Date.self, value, path: path, expected: "an ISO-8601 date string")
            }
            return try Self.cast(date, path)
        }
        if T.self == Data.self {
            guard case .blob(let blob) = value else { throw mismatch(Data.self, value, path: path, expected: "a blob") }
            guard let content = blob.content else {
                throw DecodingError.dataCorrupted(.init(codingPath: path, debugDescription: "the content of blob \(blob.digest) is not available on this node"))
            }
            return try Self.cast(content, path)
        }
        if T.self == Blob.self {
            guard case .blob(let blob) = value else { throw mismatch(Blob.self, value, path: path, expected: "a blob") }
            return try Self.cast(blob, path)
        }
        if T.self == URL.self {
            guard case .string(let s) = value, let url = URL(string: s) else { throw mismatch(URL.self, value, path: path, expected: "a URL string") }
            return try Self.cast(url, path)
        }
        if T.self == UUID.self {
            guard case .string(let s) = value, let uuid = UUID(uuidString: s) else { throw mismatch(UUID.self, value, path: path, expected: "a UUID string") }
            return try Self.cast(uuid, path)
        }
        if T.self == Decimal.self {
            switch value {
            case .int(let i): return try Self.cast(Decimal(i), path)
            case .double(let d): return try Self.cast(Decimal(string: "\(d)") ?? Decimal(d), path)
            default: throw mismatch(Decimal.self, value, path: path)
            }
        }
        return try T(from: ModelDecoder(value: value, codingPath: path, source: source))
    }

    /// `T` is known to be the value's type here; a cast keeps that unchecked claim out of the code.
    private static func cast<T>(_ value: Any, _ path: @autoclosure () -> [any CodingKey]) throws -> T {
        guard let t = value as? T else { throw DecodingError.typeMismatch(T.self, .init(codingPath: path(), debugDescription: "internal: not a \(T.self)")) }
        return t
    }

    func mismatch(_ type: Any.Type, _ value: DocumentValue, path: [any CodingKey], expected: String? = nil) -> DecodingError {
        DecodingError.typeMismatch(type, .init(codingPath: path, debugDescription: "expected \(expected ?? Self.name(of: type)), found \(Self.describe(value))"))
    }

    static func name(of type: Any.Type) -> String {
        switch type {
        case is [String: Any].Type: return "an object"
        case is [Any].Type: return "an array"
        case is String.Type: return "a string"
        case is Bool.Type: return "a boolean"
        default: return "\(type)"
        }
    }

    static func describe(_ value: DocumentValue) -> String {
        switch value {
        case .null: return "null"
        case .bool(let b): return "boolean \(b)"
        case .int(let i): return "number \(i)"
        case .double(let d): return "number \(d)"
        case .string(let s): return "string \(JSONWriter.string(.string(s.count > 40 ? String(s.prefix(40)) + "…" : s)))"
        case .array: return "an array"
        case .dictionary: return "an object"
        case .blob: return "a blob"
        }
    }

    /// A coding path as `tags[2].name`.
    static func render(_ path: [any CodingKey]) -> String {
        var text = ""
        for key in path {
            if let i = key.intValue, key.stringValue == "\(i)" || key.stringValue == "Index \(i)" {
                text += "[\(i)]"
            } else {
                text += (text.isEmpty ? "" : ".") + key.stringValue
            }
        }
        return text.isEmpty ? "(top level)" : text
    }

    /// The path and a sentence for a decoding error.
    static func describe(_ error: DecodingError) -> (path: String, reason: String) {
        switch error {
        case .typeMismatch(_, let c), .dataCorrupted(let c):
            return (render(c.codingPath), c.debugDescription)
        case .valueNotFound(let type, let c):
            return (render(c.codingPath), "expected a value of type \(type), \(c.debugDescription)")
        case .keyNotFound(let key, let c):
            return (render(c.codingPath + [key]), "the key '\(key.stringValue)' is missing")
        @unknown default:
            return ("(unknown)", "\(error)")
        }
    }
}

/// A coding key the coder makes itself: an array position, or `super`.
struct PathKey: CodingKey {
    private let name: String?
    let intValue: Int?
    var stringValue: String { name ?? String(intValue ?? 0) }
    init(_ index: Int) { (name, intValue) = (nil, index) }
    init(_ name: String) { (self.name, intValue) = (name, nil) }
    init?(intValue: Int) { self.init(intValue) }
    init?(stringValue: String) { self.init(stringValue) }
}

/// Reads a stored value as one primitive: shared by the three container kinds.
private struct PrimitiveReader {
    let decoder: ModelDecoder

    func string(_ v: DocumentValue, _ path: @autoclosure () -> [any CodingKey]) throws -> String {
        guard case .string(let s) = v else { throw failure(String.self, v, path) }
        return s
    }

    func bool(_ v: DocumentValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Bool {
        guard case .bool(let b) = v else { throw failure(Bool.self, v, path) }
        return b
    }

    func float(_ v: DocumentValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Float {
        let d = try double(v, path())
        guard abs(d) <= Double(Float.greatestFiniteMagnitude) else {
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "\(ModelDecoder.describe(v)) does not fit in Float"))
        }
        return Float(d)
    }

    func double(_ v: DocumentValue, _ path: @autoclosure () -> [any CodingKey]) throws -> Double {
        switch v {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: throw failure(Double.self, v, path)
        }
    }

    func integer<I: FixedWidthInteger>(_ v: DocumentValue, _ path: @autoclosure () -> [any CodingKey]) throws -> I {
        let result: I?
        switch v {
        case .int(let i): result = I(exactly: i)
        case .double(let d): result = I(exactly: d)
        default: throw failure(I.self, v, path)
        }
        guard let result else {
            throw DecodingError.dataCorrupted(.init(codingPath: path(), debugDescription: "\(ModelDecoder.describe(v)) does not fit in \(I.self)"))
        }
        return result
    }

    private func failure(_ type: Any.Type, _ v: DocumentValue, _ path: () -> [any CodingKey]) -> DecodingError {
        if v == .null { return DecodingError.valueNotFound(type, .init(codingPath: path(), debugDescription: "found null")) }
        return decoder.mismatch(type, v, path: path())
    }
}

private struct KeyedContainer<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let decoder: ModelDecoder
    let members: [String: DocumentValue]
    var codingPath: [any CodingKey] { decoder.codingPath }
    var allKeys: [Key] { members.keys.compactMap(Key.init(stringValue:)) }
    private var read: PrimitiveReader { PrimitiveReader(decoder: decoder) }

    func contains(_ key: Key) -> Bool { members[key.stringValue] != nil }

    private func value(_ key: Key) throws -> DocumentValue {
        guard let v = members[key.stringValue] else {
            throw DecodingError.keyNotFound(key, .init(codingPath: codingPath, debugDescription: "missing"))
        }
        return v
    }

    private func path(_ key: Key) -> [any CodingKey] { codingPath + [key] }

    func decodeNil(forKey key: Key) throws -> Bool { (members[key.stringValue] ?? .null) == .null }
    func decode(_ type: Bool.Type, forKey key: Key) throws -> Bool { try read.bool(value(key), path(key)) }
    func decode(_ type: String.Type, forKey key: Key) throws -> String { try read.string(value(key), path(key)) }
    func decode(_ type: Double.Type, forKey key: Key) throws -> Double { try read.double(value(key), path(key)) }
    func decode(_ type: Float.Type, forKey key: Key) throws -> Float { try read.float(value(key), path(key)) }
    func decode(_ type: Int.Type, forKey key: Key) throws -> Int { try read.integer(value(key), path(key)) }
    func decode(_ type: Int8.Type, forKey key: Key) throws -> Int8 { try read.integer(value(key), path(key)) }
    func decode(_ type: Int16.Type, forKey key: Key) throws -> Int16 { try read.integer(value(key), path(key)) }
    func decode(_ type: Int32.Type, forKey key: Key) throws -> Int32 { try read.integer(value(key), path(key)) }
    func decode(_ type: Int64.Type, forKey key: Key) throws -> Int64 { try read.integer(value(key), path(key)) }
    func decode(_ type: UInt.Type, forKey key: Key) throws -> UInt { try read.integer(value(key), path(key)) }
    func decode(_ type: UInt8.Type, forKey key: Key) throws -> UInt8 { try read.integer(value(key), path(key)) }
    func decode(_ type: UInt16.Type, forKey key: Key) throws -> UInt16 { try read.integer(value(key), path(key)) }
    func decode(_ type: UInt32.Type, forKey key: Key) throws -> UInt32 { try read.integer(value(key), path(key)) }
    func decode(_ type: UInt64.Type, forKey key: Key) throws -> UInt64 { try read.integer(value(key), path(key)) }

    func decode<T: Decodable>(_ type: T.Type, forKey key: Key) throws -> T {
        let v = try value(key)
        if v == .null, !(T.self is any ExpressibleByNilLiteral.Type) {
            throw DecodingError.valueNotFound(type, .init(codingPath: path(key), debugDescription: "found null"))
        }
        return try decoder.unbox(v, as: type, path: path(key))
    }

    func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type, forKey key: Key) throws -> KeyedDecodingContainer<NestedKey> {
        try ModelDecoder(value: value(key), codingPath: path(key), source: decoder.source).container(keyedBy: type)
    }

    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        try ModelDecoder(value: value(key), codingPath: path(key), source: decoder.source).unkeyedContainer()
    }

    func superDecoder() throws -> any Decoder {
        ModelDecoder(value: members["super"] ?? .null, codingPath: codingPath + [PathKey("super")], source: decoder.source)
    }

    func superDecoder(forKey key: Key) throws -> any Decoder {
        // A missing key gives a decoder of null: DocumentID relies on it.
        ModelDecoder(value: members[key.stringValue] ?? .null, codingPath: path(key), source: decoder.source)
    }
}

private struct UnkeyedContainer: UnkeyedDecodingContainer {
    let decoder: ModelDecoder
    let elements: [DocumentValue]
    var currentIndex = 0
    var codingPath: [any CodingKey] { decoder.codingPath }
    var count: Int? { elements.count }
    var isAtEnd: Bool { currentIndex >= elements.count }
    private var read: PrimitiveReader { PrimitiveReader(decoder: decoder) }

    init(decoder: ModelDecoder, elements: [DocumentValue]) {
        self.decoder = decoder
        self.elements = elements
    }

    /// The next element and its path (built only when needed: errors, nested values).
    private mutating func next(_ type: Any.Type) throws -> (DocumentValue, () -> [any CodingKey]) {
        let path = { [codingPath, currentIndex] in codingPath + [PathKey(currentIndex)] as [any CodingKey] }
        guard !isAtEnd else {
            throw DecodingError.valueNotFound(type, .init(codingPath: path(), debugDescription: "found the end of the array (\(elements.count) elements)"))
        }
        defer { currentIndex += 1 }
        return (elements[currentIndex], path)
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd, elements[currentIndex] == .null else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ type: Bool.Type) throws -> Bool { let (v, p) = try next(type); return try read.bool(v, p()) }
    mutating func decode(_ type: String.Type) throws -> String { let (v, p) = try next(type); return try read.string(v, p()) }
    mutating func decode(_ type: Double.Type) throws -> Double { let (v, p) = try next(type); return try read.double(v, p()) }
    mutating func decode(_ type: Float.Type) throws -> Float { let (v, p) = try next(type); return try read.float(v, p()) }
    mutating func decode(_ type: Int.Type) throws -> Int { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: Int8.Type) throws -> Int8 { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: Int16.Type) throws -> Int16 { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: Int32.Type) throws -> Int32 { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: Int64.Type) throws -> Int64 { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: UInt.Type) throws -> UInt { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: UInt8.Type) throws -> UInt8 { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: UInt16.Type) throws -> UInt16 { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: UInt32.Type) throws -> UInt32 { let (v, p) = try next(type); return try read.integer(v, p()) }
    mutating func decode(_ type: UInt64.Type) throws -> UInt64 { let (v, p) = try next(type); return try read.integer(v, p()) }

    mutating func decode<T: Decodable>(_ type: T.Type) throws -> T {
        let (v, p) = try next(type)
        if v == .null, !(T.self is any ExpressibleByNilLiteral.Type) {
            throw DecodingError.valueNotFound(type, .init(codingPath: p(), debugDescription: "found null"))
        }
        return try decoder.unbox(v, as: type, path: p())
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy type: NestedKey.Type) throws -> KeyedDecodingContainer<NestedKey> {
        let (v, p) = try next([String: Any].self)
        return try ModelDecoder(value: v, codingPath: p(), source: decoder.source).container(keyedBy: type)
    }

    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let (v, p) = try next([Any].self)
        return try ModelDecoder(value: v, codingPath: p(), source: decoder.source).unkeyedContainer()
    }

    mutating func superDecoder() throws -> any Decoder {
        let (v, p) = try next(Any.self)
        return ModelDecoder(value: v, codingPath: p(), source: decoder.source)
    }
}

private struct SingleValueContainer: SingleValueDecodingContainer {
    let decoder: ModelDecoder
    var codingPath: [any CodingKey] { decoder.codingPath }
    private var read: PrimitiveReader { PrimitiveReader(decoder: decoder) }
    private var value: DocumentValue { decoder.value }

    func decodeNil() -> Bool { value == .null }
    func decode(_ type: Bool.Type) throws -> Bool { try read.bool(value, codingPath) }
    func decode(_ type: String.Type) throws -> String { try read.string(value, codingPath) }
    func decode(_ type: Double.Type) throws -> Double { try read.double(value, codingPath) }
    func decode(_ type: Float.Type) throws -> Float { try read.float(value, codingPath) }
    func decode(_ type: Int.Type) throws -> Int { try read.integer(value, codingPath) }
    func decode(_ type: Int8.Type) throws -> Int8 { try read.integer(value, codingPath) }
    func decode(_ type: Int16.Type) throws -> Int16 { try read.integer(value, codingPath) }
    func decode(_ type: Int32.Type) throws -> Int32 { try read.integer(value, codingPath) }
    func decode(_ type: Int64.Type) throws -> Int64 { try read.integer(value, codingPath) }
    func decode(_ type: UInt.Type) throws -> UInt { try read.integer(value, codingPath) }
    func decode(_ type: UInt8.Type) throws -> UInt8 { try read.integer(value, codingPath) }
    func decode(_ type: UInt16.Type) throws -> UInt16 { try read.integer(value, codingPath) }
    func decode(_ type: UInt32.Type) throws -> UInt32 { try read.integer(value, codingPath) }
    func decode(_ type: UInt64.Type) throws -> UInt64 { try read.integer(value, codingPath) }
    func decode<T: Decodable>(_ type: T.Type) throws -> T { try decoder.unbox(value, as: type, path: codingPath) }
}
