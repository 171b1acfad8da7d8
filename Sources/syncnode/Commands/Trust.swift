import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

/// `syncnode trust add|remove|list`: the peers this node trusts by certificate (DIR/.node/trusted-peers).
struct Trust: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage the peers this node trusts by certificate fingerprint: it syncs with them (--auto-sync) and admits them without a password. A running node sees changes at once.",
        discussion: "Example (a fingerprint may start with '-'):\n  syncnode trust add --note laptop -ICa_01pvs552r41vgxwi4kNfq-4QfEhMwZnt30uJZA",
        subcommands: [Add.self, Remove.self, List.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Trust a peer's certificate fingerprint (as its `syncnode identity` prints).", discussion: "Example:\n  syncnode trust add NmYai_cw4Lr02Jzp0Mq_jspwXvl3El9zz86f-Tu6UIY --note laptop")

        @ParentCommand var syncnode: SyncNodeCommand
        var node: NodeOptions { syncnode.node }
        @Argument(help: "The fingerprint, as `syncnode identity` prints it (one that starts with '-' is taken as is).") var fingerprint: String
        @Option(help: "The peer's UUID: the node then refuses that UUID with any other certificate.") var uuid: String?
        @Option(help: "A note kept beside it (e.g. the machine's name).") var note: String = ""
        @Option(name: .customLong("keyspace"), help: "A keyspace the peer may reach (db, or db.scope.collection; repeatable). Default: every one, or the scope it has.")
        var keyspaces: [Keyspace] = []
        @Option(help: "read or write (default: write, or the access it has).") var access: PeerScope.Access?

        func run() throws {
            // Without either option a peer trusted already keeps its scope.
            let scope = keyspaces.isEmpty && access == nil ? nil : PeerScope(keyspaces: keyspaces.isEmpty ? nil : keyspaces, access: access ?? .write)
            let store: TrustStore
            do { store = try Trust.store(node) } catch { throw CLIError.user("\(error)") }
            do { try store.add(fingerprint: fingerprint, uuid: uuid, note: note, scope: scope) } catch { throw CLIError.user("\(error)") }
            let kept = store.peer(clientFingerprint: fingerprint)?.scope ?? .everything
            Output.line(["ok": true, "fingerprint": .string(fingerprint), "scope": .string(kept.description)])
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop trusting a fingerprint: the peer is refused from its next request on.", discussion: "Example:\n  syncnode trust remove NmYai_cw4Lr02Jzp0Mq_jspwXvl3El9zz86f-Tu6UIY")

        @ParentCommand var syncnode: SyncNodeCommand
        var node: NodeOptions { syncnode.node }
        @Argument(help: "The fingerprint.") var fingerprint: String

        func run() throws {
            let removed: Bool
            do { removed = try Trust.store(node).remove(fingerprint: fingerprint) } catch { throw CLIError.user("\(error)") }
            guard removed else { throw CLIError.user("\(fingerprint) is not in the trusted peers") }
            Output.line(["ok": true, "fingerprint": .string(fingerprint)])
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the trusted peers as JSON lines {\"fingerprint\",\"uuid\",\"access\",\"keyspaces\",\"invitation\",\"note\"}.", discussion: "Example:\n  syncnode trust list")

        @ParentCommand var syncnode: SyncNodeCommand
        var node: NodeOptions { syncnode.node }

        func run() throws {
            let entries: [TrustStore.Entry]
            do { entries = try Trust.store(node).entries() } catch { throw CLIError.user("\(error)") }
            for entry in entries where !entry.revoked {
                let fields: [String: DocumentValue] = [
                    "fingerprint": .string(entry.fingerprint), "uuid": entry.uuid.map { .string($0) } ?? .null, "note": .string(entry.note),
                    "invitation": entry.invitation.map { .string($0) } ?? .null,
                ]
                Output.line(fields.merging(entry.scope.json) { a, _ in a })
            }
        }
    }

    static func store(_ node: NodeOptions) throws -> TrustStore {
        try NodeDirectory(url: node.directoryURL).trustedPeers()
    }
}
