import SyncNodeStore

/// Which changes a replication passes: all of them, the listed documents (CouchDB's `doc_ids`),
/// or those whose winning revision a Mango selector matches (its `selector`).
enum ChangeFilter: Sendable, Equatable {
    case all
    case documentIDs([String])
    /// Compiled once, for the local store's feed; sent as given to a peer's.
    case selector(ChangeSelector)

    /// The filter `config` asks for.
    /// - Throws: ``SyncError/invalidConfiguration(_:)`` when it sets both `documentIDs` and
    ///   `selector`; ``StoreError/invalidQuery(_:)`` for a selector CouchDB would refuse (checked
    ///   here, before any peer is asked).
    init(_ config: ReplicatorConfiguration) throws {
        switch (config.documentIDs, config.selector) {
        case (nil, nil): self = .all
        case (let ids?, nil): self = .documentIDs(ids)
        case (nil, let selector?): self = .selector(try ChangeSelector(selector, for: config.collection))
        case (_?, _?):
            throw SyncError.invalidConfiguration("documentIDs and selector exclude each other, as in CouchDB: give one of them")
        }
    }

    /// How a `_changes` request asks a peer for it: what to add to the query, and the POST body;
    /// nil for no filter (a GET).
    var changesRequest: (query: String, body: String)? {
        switch self {
        case .all: return nil
        case .documentIDs(let ids): return ("&filter=_doc_ids", DocumentValue.dictionary(["doc_ids": .array(ids.map { .string($0) })]).toJSON())
        case .selector(let compiled): return ("&filter=_selector", DocumentValue.dictionary(["selector": compiled.selector]).toJSON())
        }
    }

    /// What it adds to a replication's ID: another filter is another replication, with
    /// checkpoints of its own. Without a selector, the parts are those of earlier versions, so
    /// their checkpoints still count.
    var identityParts: [String] {
        switch self {
        case .all: return [""]
        case .documentIDs(let ids): return [ids.sorted().joined(separator: ",")]
        case .selector(let compiled): return ["", "selector:" + compiled.selector.toJSON()]
        }
    }
}
