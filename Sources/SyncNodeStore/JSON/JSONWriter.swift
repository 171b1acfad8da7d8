import Foundation

/// Writes document values as canonical JSON: object keys sorted by their
/// UTF-8 bytes, no insignificant whitespace, integers without a fraction and
/// other numbers in their shortest round-trip form.
///
/// Canonical output is what makes revision IDs deterministic: the same body
/// written on two nodes gives the same bytes and so the same digest.
package struct JSONWriter {
    package var bytes: [UInt8] = []
    /// Whether a blob was written: only then has a body blobs to store.
    private(set) var wroteBlob = false

    package init(capacity: Int = 1024) {
        bytes.reserveCapacity(capacity)
    }

    static func string(_ value: DocumentValue) -> String {
        var w = JSONWriter()
        w.write(value)
        return w.text
    }

    static func string(object: [String: DocumentValue]) -> String {
        var w = JSONWriter()
        w.writeObject(object)
        return w.text
    }

    package var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func write(_ value: DocumentValue) {
        switch value {
        case .null: append("null")
        case .bool(let b): append(b ? "true" : "false")
        case .int(let i): writeInteger(i)
        case .double(let d): writeDouble(d)
        case .string(let s): writeString(s)
        case .array(let a):
            bytes.append(UInt8(ascii: "["))
            for (i, v) in a.enumerated() {
                if i > 0 { bytes.append(UInt8(ascii: ",")) }
                write(v)
            }
            bytes.append(UInt8(ascii: "]"))
        case .dictionary(let d): writeObject(d)
        case .blob(let b):
            wroteBlob = true
            writeObject(b.metadata)
        }
    }

    package mutating func writeObject(_ object: [String: DocumentValue]) {
        writeObject(object) { writer, value in writer.write(value) }
    }

    /// Writes `object` with its keys in canonical order, each value by `writeValue`:
    /// one sorting rule for every kind of object the store encodes.
    mutating func writeObject<Value>(_ object: [String: Value], writeValue: (inout JSONWriter, Value) -> Void) {
        bytes.append(UInt8(ascii: "{"))
        // Positions sorted by each key's first eight bytes as one integer, the whole keys
        // compared only on a tie: no value is copied, no key compared as a String, and
        // the order lives on the stack.
        withUnsafeTemporaryAllocation(of: (prefix: UInt64, position: Dictionary<String, Value>.Index).self, capacity: object.count) { buffer in
            var sorted = buffer  // `sort` is mutating; the buffer holds exactly object.count
            for (n, position) in object.indices.enumerated() {
                sorted.initializeElement(at: n, to: (Self.sortPrefix(object.keys[position]), position))
            }
            func precedes(_ a: (prefix: UInt64, position: Dictionary<String, Value>.Index), _ b: (prefix: UInt64, position: Dictionary<String, Value>.Index)) -> Bool {
                a.prefix != b.prefix ? a.prefix < b.prefix : Self.utf8Order(object.keys[a.position], object.keys[b.position])
            }
            if sorted.count <= 32 {
                // The usual object: an insertion sort inline costs a fraction of the generic sort's calls.
                for i in sorted.indices.dropFirst() {
                    var j = i
                    while j > 0, precedes(sorted[j], sorted[j - 1]) {
                        sorted.swapAt(j, j - 1)
                        j -= 1
                    }
                }
            } else {
                sorted.sort(by: precedes)
            }
            for (n, entry) in sorted.enumerated() {
                if n > 0 { bytes.append(UInt8(ascii: ",")) }
                writeString(object.keys[entry.position])
                bytes.append(UInt8(ascii: ":"))
                writeValue(&self, object.values[entry.position])
            }
            _ = sorted.deinitialize()
        }
        bytes.append(UInt8(ascii: "}"))
    }

    /// A key's first eight UTF-8 bytes, big-endian, zero-padded: comparing two of them
    /// orders the keys as their bytes would, but for keys that tie on them.
    @inline(__always)
    private static func sortPrefix(_ key: String) -> UInt64 {
        func prefix<C: Collection>(_ bytes: C) -> UInt64 where C.Element == UInt8 {
            var value: UInt64 = 0
            var shift: UInt64 = 56
            for byte in bytes.prefix(8) {
                value |= UInt64(byte) << shift
                shift &-= 8
            }
            return value
        }
        return key.utf8.withContiguousStorageIfAvailable { prefix($0) } ?? prefix(key.utf8)
    }

    /// Byte order, not Swift's `<` (which compares Unicode-normalized scalars),
    /// so every platform and every other implementation sorts alike.
    static func utf8Order(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { pa in
            b.withUTF8 { pb in
                let n = min(pa.count, pb.count)
                if n > 0, let x = pa.baseAddress, let y = pb.baseAddress {
                    let c = memcmp(x, y, n)
                    if c != 0 { return c < 0 }
                }
                return pa.count < pb.count
            }
        }
    }

    package mutating func writeInteger(_ i: Int64) {
        if i < 0 { bytes.append(UInt8(ascii: "-")) }
        var magnitude = i.magnitude
        if magnitude < 10 {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude))
            return
        }
        var digits: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)  // 32 bytes of scratch, no allocation
        withUnsafeMutableBytes(of: &digits) { buffer in
            var n = 0
            while magnitude > 0 {
                buffer[31 - n] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
                n += 1
            }
            bytes.append(contentsOf: buffer[(32 - n)...])
        }
    }

    mutating func writeDouble(_ d: Double) {
        if d.isFinite, d == d.rounded(.towardZero), abs(d) < 9.0e15 {
            writeInteger(Int64(d))
        } else if d.isFinite {
            append(d.description)
        } else {
            // Unreachable through DocumentValue.number; JSON has no NaN/Infinity.
            append("null")
        }
    }

    private mutating func append(_ s: String) {
        bytes.append(contentsOf: s.utf8)
    }

    /// Appends bytes that are already JSON.
    package mutating func writeRaw(_ s: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: s.utf8Start, count: s.utf8CodeUnitCount))
    }

    package mutating func writeRaw(_ s: String) {
        if s.utf8.withContiguousStorageIfAvailable({ bytes.append(contentsOf: $0) }) == nil {
            bytes.append(contentsOf: s.utf8)
        }
    }

    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    package mutating func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        // Fast path: nothing to escape, copy the bytes at once. (`withUTF8` would need a
        // mutable copy of `s`, and so a retain and release per string.)
        let plain = s.utf8.withContiguousStorageIfAvailable { buffer -> Bool in
            guard StringScan.firstSpecial(buffer, from: 0, to: buffer.count) == buffer.count else { return false }
            bytes.append(contentsOf: buffer)
            return true
        }
        if plain == true {
            bytes.append(UInt8(ascii: "\""))
            return
        }
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "\""): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case UInt8(ascii: "\\"): bytes.append(UInt8(ascii: "\\")); bytes.append(byte)
            case 0x0A: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "n"))
            case 0x0D: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "r"))
            case 0x09: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "t"))
            case 0x08: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "b"))
            case 0x0C: bytes.append(UInt8(ascii: "\\")); bytes.append(UInt8(ascii: "f"))
            case 0..<0x20:
                bytes.append(contentsOf: Array("\\u00".utf8))
                bytes.append(Self.hex[Int(byte >> 4)])
                bytes.append(Self.hex[Int(byte & 0xF)])
            default: bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }
}
