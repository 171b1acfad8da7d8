import Foundation
import SyncNodeStore

/// CouchDB's `multipart/related` document upload (what its replicator sends
/// for documents with attachments): a JSON part, then one part per attachment
/// marked `"follows": true`.
enum MultipartRelated {
    struct Part {
        var headers: [String: String]
        var body: [UInt8]
    }

    /// The boundary of a `multipart/related; boundary="..."` content type, or nil.
    static func boundary(contentType: String) -> String? {
        guard contentType.lowercased().hasPrefix("multipart/related") else { return nil }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            if pair.count == 2, pair[0].lowercased() == "boundary" {
                return pair[1].trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            }
        }
        return nil
    }

    static func parse(_ body: [UInt8], boundary: String) throws -> [Part] {
        let delimiter = Array("--\(boundary)".utf8)
        var parts: [Part] = []
        guard var cursor = find(delimiter, in: body, from: 0) else { throw CouchError.badRequest("multipart body has no boundary line") }
        cursor += delimiter.count
        while cursor + 2 <= body.count {
            if body[cursor] == UInt8(ascii: "-"), body[cursor + 1] == UInt8(ascii: "-") { return parts }  // closing delimiter
            cursor = skipLineBreak(body, cursor)
            guard let headerEnd = find(Array("\r\n\r\n".utf8), in: body, from: cursor) else {
                throw CouchError.badRequest("multipart part without a header end")
            }
            var headers: [String: String] = [:]
            for line in String(decoding: body[cursor..<headerEnd], as: UTF8.self).split(separator: "\r\n") {
                let pair = line.split(separator: ":", maxSplits: 1)
                if pair.count == 2 { headers[pair[0].lowercased()] = pair[1].trimmingCharacters(in: .whitespaces) }
            }
            let contentStart = headerEnd + 4
            guard let next = find(Array("\r\n".utf8) + delimiter, in: body, from: contentStart) else {
                throw CouchError.badRequest("multipart part is not terminated")
            }
            parts.append(Part(headers: headers, body: Array(body[contentStart..<next])))
            cursor = next + 2 + delimiter.count
        }
        throw CouchError.badRequest("multipart body has no closing boundary")
    }

    /// The document of an upload with each `follows` attachment turned into inline data.
    static func document(from parts: [Part]) throws -> [String: DocumentValue] {
        guard let first = parts.first else { throw CouchError.badRequest("empty multipart body") }
        guard let text = String(validating: first.body, as: UTF8.self) else {
            throw CouchError.badRequest("the JSON part is not valid UTF-8")
        }
        guard case .dictionary(var object) = try DocumentValue(json: text) else { throw CouchError.badRequest("the first part must be a JSON object") }
        guard case .dictionary(var attachments)? = object["_attachments"] else { return object }
        // Parts follow the attachments in the order the JSON lists them; a part may also name itself.
        var following: [String] = []
        for (name, entry) in attachments {
            if case .dictionary(let e) = entry, case .bool(true)? = e["follows"] { following.append(name) }
        }
        following.sort { position(of: $0, in: text) < position(of: $1, in: text) }
        var unnamed = following.makeIterator()
        for part in parts.dropFirst() {
            let name = filename(part.headers["content-disposition"]) ?? unnamed.next()
            guard let name, case .dictionary(var entry)? = attachments[name] else {
                throw CouchError.badRequest("a multipart part matches no attachment marked follows")
            }
            entry["follows"] = nil
            entry["data"] = DocumentValue.string(Data(part.body).base64EncodedString())
            attachments[name] = .dictionary(entry)
        }
        object["_attachments"] = .dictionary(attachments)
        return object
    }

    private static func position(of name: String, in text: String) -> Int {
        guard let range = text.range(of: DocumentValue.string(name).toJSON() + ":") else { return Int.max }
        return text.utf8.distance(from: text.utf8.startIndex, to: range.lowerBound)
    }

    private static func filename(_ disposition: String?) -> String? {
        guard let disposition, let range = disposition.range(of: "filename=") else { return nil }
        return disposition[range.upperBound...].trimmingCharacters(in: CharacterSet(charactersIn: "\" ;"))
    }

    private static func skipLineBreak(_ body: [UInt8], _ i: Int) -> Int {
        var i = i
        if i < body.count, body[i] == 0x0D { i += 1 }
        if i < body.count, body[i] == 0x0A { i += 1 }
        return i
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard needle.count > 0, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0], haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }
}
