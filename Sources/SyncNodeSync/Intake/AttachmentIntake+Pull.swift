import Foundation
import SyncNodeStore

/// Pulled attachments: each stub turned into a file in the local blob store, from a revision
/// this side has already, or streamed from the peer and checked against the stub.
extension AttachmentIntake {
    /// Attachments downloaded at once, at most this many: enough to hide a round trip. From a
    /// source that sends a batch's attachments in one answer, as many answers at once.
    static let parallelDownloads = 4

    /// An attachment a pulled revision lacks: `docs[doc]`'s attachment `name`, its stub `entry`.
    private typealias Download = (doc: Int, name: String, entry: [String: DocumentValue])

    /// `docs` (fetched from `source`) with each attachment stub turned into a file of
    /// `collection`'s blob store: the local blob when a revision this side has (`attsSince`)
    /// holds the same content, otherwise the peer's content streamed in and checked against
    /// the stub's length and digest.
    ///
    /// Content the peer lacks (404, 410) leaves its stub, so storing refuses that document alone
    /// (412 `missing_stub`) instead of stopping the replication.
    ///
    /// - Throws: `CouchError` 502 for content that does not match its stub (retried like any
    ///   bad gateway); the source's errors; `StoreError` when the blob store fails.
    static func pulled(
        _ docs: [WireRevision], wanted: [WantedRevisions], into collection: DocumentCollection, from source: any AttachmentSource
    ) async throws -> [WireRevision] {
        guard docs.contains(where: { $0.meta[DocumentCollection.attachmentsKey] != nil }) else { return docs }
        let attsSince = Dictionary(wanted.map { ($0.id, $0.attsSince) }, uniquingKeysWith: +)
        var out = docs
        var downloads: [Download] = []
        var files: [Int: [String: AttachmentFile]] = [:]
        // What arrives waits here, its writeback started, and is placed at once: one wait for
        // the disk per batch instead of one per attachment.
        let batch = try collection.blobBatch()
        var written: [Int: [String: WrittenAttachment]] = [:]
        for (index, doc) in docs.enumerated() {
            guard case .dictionary(let attachments)? = doc.meta[DocumentCollection.attachmentsKey] else { continue }
            let known = try localBlobs(id: doc.id, revisions: attsSince[doc.id] ?? [], in: collection)
            for (name, value) in attachments {
                guard case .dictionary(let entry) = value, case .bool(true)? = entry["stub"] else { continue }
                if case .string(let digest)? = entry["digest"], let file = known[digest] {
                    files[index, default: [:]][name] = file
                } else {
                    downloads.append((index, name, entry))
                }
            }
        }
        do {
            // Several attachments from a node: a few requests for all of them; what it did not
            // send (and everything from CouchDB) one request each.
            var remaining = downloads
            if downloads.count > 1 {
                let received = try await inBatches(downloads, of: docs, attsSince: attsSince, into: collection, batch: batch, from: source)
                for (index, sent) in received { written[index, default: [:]].merge(sent) { $1 } }
                remaining.removeAll { received[$0.doc]?[$0.name] != nil }
            }
            try await withThrowingTaskGroup(of: (Int, String, WrittenAttachment?).self) { group in
                var pending = remaining.makeIterator()
                func next() {
                    guard let (index, name, entry) = pending.next() else { return }
                    let doc = docs[index]
                    group.addTask {
                        do {
                            return (index, name, try await download(id: doc.id, rev: doc.rev, name: name, entry: entry, into: collection, batch: batch, from: source))
                        } catch let missing as CouchError where PeerStatus.contentGone.contains(missing.status) {
                            return (index, name, nil)
                        }
                    }
                }
                for _ in 0..<parallelDownloads { next() }
                while let (index, name, attachment) = try await group.next() {
                    if let attachment { written[index, default: [:]][name] = attachment }
                    next()
                }
            }
        } catch {
            // What arrived is placed all the same (a retry finds it there), once every download
            // of the batch has ended (a task group waits for its tasks).
            try? batch.place()
            throw error
        }
        // Durable, content and names, before the documents that refer to them are saved (and
        // so before the checkpoint that skips them).
        try batch.place()
        for (index, found) in written {
            for (name, attachment) in found { files[index, default: [:]][name] = try attachment.file(in: collection) }
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

    /// `downloads` from a source that sends a batch's attachments in one answer, split into
    /// ``parallelDownloads`` answers at once: the files it sent that match their stubs, by
    /// document and name (none when the source cannot send them so; none of an answer this side
    /// cannot use).
    private static func inBatches(
        _ downloads: [Download], of docs: [WireRevision], attsSince: [String: [String]], into collection: DocumentCollection,
        batch: BlobBatch, from source: any AttachmentSource
    ) async throws -> [Int: [String: WrittenAttachment]] {
        var documents: [Int] = []
        var lengths: [Int: [String: Int?]] = [:]
        for download in downloads {
            if documents.last != download.doc { documents.append(download.doc) }
            var length: Int?
            if case .int(let n)? = download.entry["length"] { length = Int(clamping: n) }
            lengths[download.doc, default: [:]][download.name] = length
        }
        let parts = min(parallelDownloads, documents.count)
        let received = try await withThrowingTaskGroup(of: [AttachmentRequest.Key: [String: WrittenAttachment]]?.self) { group in
            for part in 0..<parts {
                let requests = stride(from: part, to: documents.count, by: parts).map { documents[$0] }.map {
                    AttachmentRequest(key: .init(id: docs[$0].id, rev: docs[$0].rev), attsSince: attsSince[docs[$0].id] ?? [], lengths: lengths[$0] ?? [:])
                }
                group.addTask {
                    do {
                        return try await source.downloadAttachments(of: requests, into: collection, batch: batch)
                    } catch let refused as CouchError where refused.status == 502 {
                        // An answer this side cannot use (malformed, or naming what was not asked
                        // for): its attachments are asked for alone instead; the others' stay.
                        return nil
                    }
                }
            }
            var all: [AttachmentRequest.Key: [String: WrittenAttachment]] = [:]
            for try await answer in group {
                if let answer { all.merge(answer) { $1 } }
            }
            return all
        }
        var found: [Int: [String: WrittenAttachment]] = [:]
        for (index, name, entry) in downloads {
            // Checked against the stub this pull received: the answer's JSON only vouches for itself.
            guard let attachment = received[.init(id: docs[index].id, rev: docs[index].rev)]?[name],
                  (try? AttachmentFile.verify(md5: attachment.blob.md5, length: attachment.blob.length, against: entry, name: name)) != nil else { continue }
            found[index, default: [:]][name] = attachment
        }
        return found
    }

    /// The blobs of the local revisions `revisions` of document `id`, by the `md5-` digest peers name them by.
    private static func localBlobs(id: String, revisions: [String], in collection: DocumentCollection) throws -> [String: AttachmentFile] {
        var known: [String: AttachmentFile] = [:]
        for rev in revisions {
            guard let body = try collection.revision(id: id, rev: rev)?.body, WireDocument.hasBlobs(body) else { continue }
            var blobs: [Blob] = []
            // Property blobs and `_attachments` alike.
            WireDocument.forEachBlob(in: try DocumentValue(json: body), path: "") { _, blob in blobs.append(blob) }
            for blob in blobs {
                if let file = AttachmentFile(digest: blob.digest, contentType: blob.contentType, in: collection) { known[file.md5] = file }
            }
        }
        return known
    }

    /// One attachment of revision `rev`, streamed from `source` into `collection`'s blob store,
    /// into `batch`; checked against its stub before it is kept. ``pulled(_:wanted:into:from:)``
    /// places the batch.
    private static func download(
        id: String, rev: String, name: String, entry: [String: DocumentValue], into collection: DocumentCollection,
        batch: BlobBatch, from source: any AttachmentSource
    ) async throws -> WrittenAttachment {
        var declared: Int?
        if case .int(let n)? = entry["length"] { declared = Int(clamping: n) }
        let writer = try collection.blobWriter()
        do {
            try await source.download(id: id, rev: rev, name: name, declaredLength: declared) { try writer.append($0) }
        } catch {
            writer.abandon()
            throw error
        }
        let blob = try writer.finish(into: batch) { md5, length in
            do {
                try AttachmentFile.verify(md5: md5, length: length, against: entry, name: name)
            } catch let error as CouchError {
                // The peer's fault, or the network's: a bad gateway, retried.
                throw CouchError(status: 502, error: "bad_gateway", reason: "\(id): \(error.reason)")
            }
        }
        return WrittenAttachment(blob: blob, contentType: entry["content_type"]?.stringValue ?? "application/octet-stream")
    }
}
