import Foundation
import SyncNodeStore

/// A local collection as one side of a replication.
struct LocalDatabase: ReplicationPeer {
    let collection: DocumentCollection

    func identity() async throws -> String { "\(collection.database.uuid)/\(collection.fullName)" }

    func changes(since: String, limit: Int, documentIDs: [String]?) async throws -> (rows: [PeerChange], lastSeq: String) {
        let start = Int64(since) ?? 0
        var seq = start
        var rows: [PeerChange] = []
        let wanted = documentIDs.map(Set.init)
        // Page until `limit` rows pass the filter or the feed ends.
        while rows.count < limit {
            let page = try collection.changes(since: seq, limit: limit, allLeaves: true)
            guard let last = page.last else { break }
            seq = last.sequence
            for entry in page where wanted?.contains(entry.id) ?? true {
                rows.append(PeerChange(seq: String(entry.sequence), id: entry.id, revs: entry.leafRevs))
            }
            if page.count < limit { break }
        }
        return (rows, String(seq))
    }

    func revsDiff(_ revs: [String: [String]]) async throws -> [String: [String]] {
        try collection.revsDiff(revs).mapValues(\.missing)
    }

    func fetch(_ wanted: [(id: String, revs: [String])]) async throws -> [[String: DocumentValue]] {
        var out: [[String: DocumentValue]] = []
        for (id, revs) in wanted {
            for rev in revs {
                guard let revision = try collection.revision(id: id, rev: rev), revision.body != nil else { continue }
                let json = try WireDocument.encode(
                    id: id, rev: rev, deleted: revision.deleted, body: revision.body, revisions: revision.history,
                    attachments: .data(since: nil), blobs: { collection.blobContent(digest: $0) })
                if case .dictionary(let doc) = try DocumentValue(json: json) { out.append(doc) }
            }
        }
        return out
    }

    func store(_ docs: [[String: DocumentValue]]) async throws -> [(id: String, reason: String)] {
        var refused: [(id: String, reason: String)] = []
        try collection.database.inBatch {
            for doc in docs {
                // A document this store cannot hold (a `_design/` ID, a malformed revision) is
                // reported and skipped; it must not roll back the batch and stall replication.
                do {
                    try ReplicatedRevision.insert(try WireDocument.decode(doc), into: collection)
                } catch let error as StoreError where error.isDocumentLevel {
                    refused.append((doc["_id"]?.toJSON() ?? "?", error.description))
                } catch let error as CouchError where error.status < 500 {
                    refused.append((doc["_id"]?.toJSON() ?? "?", error.description))
                }
            }
        }
        return refused
    }

    func waitForChanges(since: String, timeout: Duration, documentIDs: [String]?) async throws {
        let signal = ChangeSignal()
        let token = collection.addChangeListener { _ in signal.fire() }
        defer { token.remove() }
        if try collection.changeCount(since: Int64(since) ?? 0) > 0 { return }
        _ = await signal.wait(timeout: timeout)
    }

    func checkpoint(_ id: String) async throws -> [String: DocumentValue]? {
        guard let doc = try collection.localDocument(id: id), case .dictionary(let d) = try DocumentValue(json: doc.body) else { return nil }
        return d
    }

    func saveCheckpoint(_ id: String, _ body: [String: DocumentValue]) async throws {
        try collection.putLocalDocument(id: id, json: DocumentValue.dictionary(body).toJSON(), rev: nil, force: true)
    }
}
