import AsyncHTTPClient
import Foundation
import NIOCore
import SyncNodeStore

/// Pulled attachments: each stub turned into a file in the local blob store, from a revision
/// this side has already or streamed from the peer and checked against the stub.
extension HTTPRemote {
    /// Attachments downloaded at once, at most this many: enough to hide a round trip.
    static let parallelDownloads = 4

    /// `docs` with each attachment stub turned into a file: the local blob when a revision this
    /// side has (`attsSince`) holds the same content, otherwise the peer's content streamed into
    /// the local blob store and checked against the stub's length and digest.
    func withAttachmentFiles(_ docs: [WireRevision], wanted: [WantedRevisions]) async throws -> [WireRevision] {
        guard docs.contains(where: { $0.meta[DocumentCollection.attachmentsKey] != nil }) else { return docs }
        let attsSince = Dictionary(wanted.map { ($0.id, $0.attsSince) }, uniquingKeysWith: +)
        var out = docs
        var downloads: [(doc: Int, name: String, entry: [String: DocumentValue])] = []
        var files: [Int: [String: AttachmentFile]] = [:]
        for (index, doc) in docs.enumerated() {
            guard case .dictionary(let attachments)? = doc.meta[DocumentCollection.attachmentsKey] else { continue }
            let known = try localBlobs(id: doc.id, revisions: attsSince[doc.id] ?? [])
            for (name, value) in attachments {
                guard case .dictionary(let entry) = value, case .bool(true)? = entry["stub"] else { continue }
                if case .string(let digest)? = entry["digest"], let file = known[digest] {
                    files[index, default: [:]][name] = file
                } else {
                    downloads.append((index, name, entry))
                }
            }
        }
        try await withThrowingTaskGroup(of: (Int, String, AttachmentFile?).self) { group in
            var pending = downloads.makeIterator()
            func next() {
                guard let (index, name, entry) = pending.next() else { return }
                let doc = docs[index]
                group.addTask {
                    do {
                        return (index, name, try await self.download(id: doc.id, rev: doc.rev, name: name, entry: entry))
                    } catch let missing as CouchError where missing.status == 404 || missing.status == 410 {
                        // The peer lacks this content: the entry stays a stub, and storing refuses that
                        // document alone (412 missing_stub) instead of stopping the replication.
                        return (index, name, nil)
                    }
                }
            }
            for _ in 0..<Self.parallelDownloads { next() }
            while let (index, name, file) = try await group.next() {
                if let file { files[index, default: [:]][name] = file }
                next()
            }
        }
        for (index, found) in files {
            guard case .dictionary(var attachments)? = out[index].meta[DocumentCollection.attachmentsKey] else { continue }
            for (name, file) in found {
                guard case .dictionary(var entry)? = attachments[name] else { continue }
                entry["stub"] = nil
                entry["follows"] = true
                entry["digest"] = .string(file.md5)
                // The content is stored decoded, whatever encoding the peer keeps it in.
                for key in ["encoding", "encoded_length"] { entry[key] = nil }
                attachments[name] = .dictionary(entry)
            }
            var meta = out[index].meta
            meta[DocumentCollection.attachmentsKey] = .dictionary(attachments)
            out[index] = out[index].replacing(meta: meta, files: found)
        }
        return out
    }

    /// The blobs of the local revisions `revisions` of document `id`, by the `md5-` digest peers name them by.
    func localBlobs(id: String, revisions: [String]) throws -> [String: AttachmentFile] {
        var known: [String: AttachmentFile] = [:]
        for rev in revisions {
            guard let body = try local.revision(id: id, rev: rev)?.body, WireDocument.hasBlobs(body) else { continue }
            var blobs: [Blob] = []
            // Property blobs and `_attachments` alike.
            WireDocument.forEachBlob(in: try DocumentValue(json: body), path: "") { _, blob in blobs.append(blob) }
            for blob in blobs {
                if let file = AttachmentFile(digest: blob.digest, contentType: blob.contentType, in: local) { known[file.md5] = file }
            }
        }
        return known
    }

    /// One attachment of revision `rev`, streamed into the local blob store; checked against
    /// its stub before it is kept.
    func download(id: String, rev: String, name: String, entry: [String: DocumentValue]) async throws -> AttachmentFile {
        // Each segment of a name escaped on its own: CouchDB reads `/` in a name as a path separator it joins again.
        let escapedName = name.split(separator: "/", omittingEmptySubsequences: false).map { WireURL.escape(String($0)) }.joined(separator: "/")
        let path = "\(db)/\(WireURL.escape(id))/\(escapedName)?rev=\(WireURL.escape(rev))"
        var request = HTTPClientRequest(url: root + path)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        let response = try await execute(request)
        let status = Int(response.status.code)
        guard (200..<300).contains(status) else {
            let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
            throw Self.error(status, (try? DocumentValue(json: text)) ?? .null)
        }
        // The stub's length, else the answer's, and never more than this node takes from a peer.
        var declared = maxAttachmentSize
        if case .int(let n)? = entry["length"] { declared = min(declared, Int(clamping: n)) }
        if let length = response.headers.first(name: "Content-Length").flatMap(Int.init) { declared = min(declared, length) }
        let writer = try local.blobWriter()
        do {
            for try await piece in response.body {
                guard writer.length + piece.readableBytes <= declared else {
                    throw CouchError(status: 502, error: "bad_gateway", reason: "attachment '\(name)' of \(id) is longer than the \(declared) bytes declared or allowed")
                }
                try piece.withUnsafeReadableBytes { try writer.append($0) }
            }
        } catch {
            writer.abandon()
            throw timeouts.describe(error, peer: root)
        }
        let digest = try writer.finish { md5, length in
            do {
                try AttachmentFile.verify(md5: md5, length: length, against: entry, name: name)
            } catch let error as CouchError {
                // The peer's fault, or the network's: a bad gateway, retried.
                throw CouchError(status: 502, error: "bad_gateway", reason: "\(id): \(error.reason)")
            }
        }
        guard let file = AttachmentFile(digest: digest, contentType: entry["content_type"]?.stringValue ?? "application/octet-stream", in: local) else {
            throw CouchError(status: 500, error: "attachment_missing", reason: "attachment '\(name)' of \(id) was stored but cannot be read back")
        }
        return file
    }
}
