import NIOCore
import SyncNodeStore

/// A peer's attachments: a node sends a batch's in one `multipart/mixed` `_bulk_get` answer;
/// CouchDB's are read one at a time (`GET /{db}/{doc}/{attachment}?rev=`).
extension HTTPRemote: AttachmentSource {
    func download(
        id: String, rev: String, name: String, declaredLength: Int?, into sink: (UnsafeRawBufferPointer) throws -> Void
    ) async throws {
        // Each segment of a name escaped on its own: CouchDB reads `/` in a name as a path separator it joins again.
        let escapedName = name.split(separator: "/", omittingEmptySubsequences: false).map { WireURL.escape(String($0)) }.joined(separator: "/")
        let path = "\(db)/\(WireURL.escape(id))/\(escapedName)?rev=\(WireURL.escape(rev))"
        let response = try await transport.execute(transport.request(.GET, path, accept: false))
        let status = Int(response.status.code)
        guard PeerStatus.success.contains(status) else {
            let text = try await transport.text(of: response, upTo: 1 << 20)
            throw PeerStatus.error(status, answer: text)
        }
        // The stub's length, else the answer's, and never more than this node takes from a peer.
        var declared = maxAttachmentSize
        if let declaredLength { declared = min(declared, declaredLength) }
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init) { declared = min(declared, length) }
        var received = 0
        do {
            for try await piece in response.body {
                received += piece.readableBytes
                guard received <= declared else {
                    throw CouchError(status: 502, error: "bad_gateway", reason: "attachment '\(name)' of \(id) is longer than the \(declared) bytes declared or allowed")
                }
                try piece.withUnsafeReadableBytes(sink)
            }
        } catch {
            throw transport.timeouts.describe(error, peer: root)
        }
    }

    func downloadAttachments(
        of revisions: [AttachmentRequest], into collection: DocumentCollection, batch: BlobBatch
    ) async throws -> [AttachmentRequest.Key: [String: WrittenAttachment]]? {
        guard try await sendsMultipartBulkGet() else { return nil }
        var body = JSONWriter(capacity: 16 + revisions.reduce(0) { $0 + $1.key.id.utf8.count + 64 * (1 + $1.attsSince.count) })
        body.writeRaw(#"{"docs":["#)
        for (index, revision) in revisions.enumerated() {
            body.writeRaw(index == 0 ? #"{"id":"# : #",{"id":"#)
            body.writeString(revision.key.id)
            body.writeRaw(#","rev":"#)
            body.writeString(revision.key.rev)
            body.writeRaw(#","atts_since":["#)
            for (n, rev) in revision.attsSince.enumerated() {
                if n > 0 { body.writeRaw(",") }
                body.writeString(rev)
            }
            body.writeRaw("]}")
        }
        body.writeRaw("]}")
        let path = "\(db)/_bulk_get?attachments=true"
        // Not gzip-encoded: the attachments' bytes go as they are stored.
        var request = transport.request(.POST, path, body: .json(body.text), accept: false)
        request.headers.add(name: "Accept", value: "multipart/mixed")
        let response = try await transport.execute(request)
        let status = Int(response.status.code)
        guard PeerStatus.success.contains(status) else {
            throw PeerStatus.error(status, answer: try await transport.text(of: response, upTo: 1 << 20))
        }
        let type = response.headers.first(name: "Content-Type") ?? ""
        guard let boundary = MultipartScanner.boundary(of: "multipart/mixed", in: type) else {
            // Not the node its welcome said (an older one behind the same address, say): asked no more.
            multipartBulkGet.withLock { $0 = Task { false } }
            _ = try? await transport.text(of: response, upTo: 1 << 20)
            return nil
        }
        let asked = Dictionary(revisions.map { ($0.key, $0.lengths) }, uniquingKeysWith: { $1 })
        let reader = MultipartMixed.Reader(boundary: boundary, jsonLimit: Self.partJSONLimit, attachmentLimit: maxAttachmentSize, collection: collection, batch: batch) { object in
            // Nothing is written that was not asked for, nor longer than its stub says.
            let key = AttachmentRequest.Key(id: object["_id"]?.stringValue ?? "", rev: object["_rev"]?.stringValue ?? "")
            guard let lengths = asked[key] else { throw CouchError.badRequest("it sent \(key.id) \(key.rev), which was not asked for") }
            guard case .dictionary(let attachments)? = object["_attachments"] else { return }
            for (name, entry) in attachments where entry["follows"] == .bool(true) {
                guard let length = lengths[name] else { throw CouchError.badRequest("it sent attachment '\(name)' of \(key.id), which was not asked for") }
                if let length, entry["length"] != .int(Int64(length)) {
                    throw CouchError.badRequest("attachment '\(name)' of \(key.id) is declared \(entry["length"]?.toJSON() ?? "null") bytes, not \(length)")
                }
            }
        }
        defer { reader.abandon() }
        do {
            for try await piece in response.body {
                try piece.withUnsafeReadableBytes { try reader.feed($0) }
            }
            var written: [AttachmentRequest.Key: [String: WrittenAttachment]] = [:]
            for received in try reader.result() {
                written[AttachmentRequest.Key(id: received.id, rev: received.rev), default: [:]].merge(received.written) { $1 }
            }
            return written
        } catch let error as CouchError where error.status == 400 || error.status == 413 {
            // Malformed or oversized content is the peer's fault or the network's: a bad gateway, retried.
            throw CouchError(status: 502, error: "bad_gateway", reason: "\(root): \(error.reason)")
        } catch {
            throw transport.timeouts.describe(error, peer: root)
        }
    }

    /// The largest document JSON a part of a batched answer may hold (the batch's bodies came
    /// in the first answer; this one's are read only for their `_id`, `_rev` and attachments).
    static let partJSONLimit = 64 << 20

    /// Whether the peer's welcome (`GET /`) names ``Handlers/multipartBulkGet``: asked once (by
    /// one request, however many answers wait for it), and again after a failure to ask.
    private func sendsMultipartBulkGet() async throws -> Bool {
        let asking = multipartBulkGet.withLock { known in
            if let known { return known }
            let task = Task { [transport] in
                let welcome: DocumentValue
                do {
                    welcome = try await transport.expect(.GET, "/")
                } catch let error as CouchError where PeerStatus.contentGone.contains(error.status) {
                    welcome = .null
                }
                guard case .array(let features)? = welcome["features"] else { return false }
                return features.contains(.string(Handlers.multipartBulkGet))
            }
            known = task
            return task
        }
        do {
            // Stopped while it waits: the welcome's request is cancelled too (every waiter belongs to
            // the same run), and the next run asks again.
            return try await withTaskCancellationHandler { try await asking.value } onCancel: { asking.cancel() }
        } catch {
            multipartBulkGet.withLock { if $0 == asking { $0 = nil } }
            throw error
        }
    }
}
