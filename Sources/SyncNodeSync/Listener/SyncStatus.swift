import SyncNodeStore

/// How the node stands with each trusted peer on each keyspace it syncs with them, read from
/// the console's peers (``NodeConsole/peers``): `GET /_node/sync-status`, and the
/// `syncnode_in_sync` and `syncnode_pending_changes` metrics.
struct SyncStatus {
    /// One keyspace with one peer (`keyspace` nil: a trusted peer nothing is synced with yet).
    struct Entry {
        let peer: String
        let name: String
        let keyspace: String?
        let fields: [String: DocumentValue]

        var inSync: Bool { fields["state"] == .string("in_sync") }

        /// The changes pending `direction` (`push` or `pull`), when counted.
        func pending(_ direction: String) -> Int64? {
            if case .int(let count)? = fields["pending"]?[direction] { count } else { nil }
        }
    }

    let entries: [Entry]

    init(peers: DocumentValue) {
        var entries: [Entry] = []
        if case .array(let listed) = peers {
            for peer in listed where peer["trusted"] == .bool(true) {
                let uuid = peer["uuid"]?.stringValue ?? "", name = peer["name"]?.stringValue ?? uuid
                guard case .dictionary(let syncs)? = peer["collections"], !syncs.isEmpty else {
                    entries.append(Entry(peer: uuid, name: name, keyspace: nil, fields: [
                        "state": "connecting", "reason": "no keyspace is synced with it yet (none shared, or it has not answered)",
                    ]))
                    continue
                }
                for (keyspace, sync) in syncs.sorted(by: { $0.key < $1.key }) {
                    guard case .dictionary(let fields) = sync else { continue }
                    entries.append(Entry(peer: uuid, name: name, keyspace: keyspace, fields: fields))
                }
            }
        }
        self.entries = entries
    }

    /// Every trusted peer in sync on every keyspace; false when there is no trusted peer (nothing
    /// was measured).
    var inSync: Bool { !entries.isEmpty && entries.allSatisfy(\.inSync) }

    var json: DocumentValue {
        let keys = ["state", "reason", "pending", "activity", "last_error", "last_in_sync", "seconds_since_in_sync", "subscription"]
        return [
            "in_sync": .bool(inSync),
            "peers": .array(entries.map { entry in
                var row: [String: DocumentValue] = ["peer": .string(entry.peer), "name": .string(entry.name),
                                                    "keyspace": entry.keyspace.map { .string($0) } ?? .null]
                for key in keys { row[key] = entry.fields[key] ?? .null }
                return .dictionary(row)
            }),
        ]
    }
}
