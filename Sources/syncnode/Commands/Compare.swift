import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

struct Compare: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Are two nodes in sync? Compare their copies of a keyspace by digest: equal, or one JSON line per differing document.",
        discussion: """
            A and B are each a data directory or a peer URL: https://host:port/db (fp= pins the peer's certificate, as in a pairing URL; user:password@ signs in with a password). A data directory's certificate signs in to the peers that trust it. Only the buckets whose hashes differ are listed, so two big nodes that differ in a few documents exchange little. A peer without _digest (CouchDB, PouchDB) is read through its whole _changes feed instead, and the command says so.

            Equal: prints {"count":N,"equal":true} and exits 0. Different: prints {"id","a","b"} per document, each side {"rev","deleted"} or null where it lacks the document, and exits 1.

            Example:
              syncnode compare /var/lib/syncnode 'https://192.168.1.21:7984/default?fp=...'
            """)

    @ParentCommand var syncnode: SyncNodeCommand
    @Argument(help: "A data directory or a peer URL.") var a: String
    @Argument(help: "Another data directory or peer URL.") var b: String
    @Option(help: "The keyspace compared in a data directory (default: the URL's database when the other side is a URL, else `default`). A URL names its own in its path.")
    var keyspace: Keyspace?

    func validate() throws {
        for side in [a, b] where Self.isURL(side) { _ = try PeerURL.parse(side, option: "compare") }
    }

    func run() async throws {
        let keyspace = self.keyspace ?? [a, b].first(where: Self.isURL).flatMap { URL(string: $0)?.pathComponents.dropFirst().first }.flatMap { Keyspace($0) } ?? .defaultDatabase
        // Peers are asked with the certificate of a local node: a directory compared, else --dir's.
        let local = [a, b].first { !Self.isURL($0) }.map { URL(fileURLWithPath: $0, isDirectory: true) } ?? syncnode.node.directoryURL
        let identity = FileManager.default.fileExists(atPath: NodeHome(directory: local).folder.path)
            ? try NodeDirectory(url: local).tlsIdentity() : nil
        var opened: [Database] = []
        var remotes: [RemoteDigest] = []
        defer { for db in opened { try? db.close() } }
        func source(_ side: String) async throws -> any DigestSource {
            guard Self.isURL(side) else {
                let db = try NodeOptions.open(database: keyspace.database, in: URL(fileURLWithPath: side, isDirectory: true))
                let collection = try NodeOptions.collection(keyspace, in: db)
                opened.append(db)
                return collection
            }
            let url = try PeerURL.parse(side, option: "compare")
            do {
                let remote = try await RemoteDigest.connect(url: url, identity: identity)
                remotes.append(remote)
                return remote
            } catch {
                throw CLIError.network("\(PairingURL.redacted(side)): \(error)")
            }
        }
        let outcome: DigestComparison.Outcome
        do {
            outcome = try await DigestComparison.compare(try await source(a), try await source(b))
        } catch {
            for remote in remotes { await remote.shutdown() }
            throw Self.commandError(error)
        }
        var received = 0
        for (remote, side) in zip(remotes, [a, b].filter(Self.isURL)) {
            if await remote.readChangesInstead {
                Output.progress("syncnode: \(PairingURL.redacted(side)) has no _digest (CouchDB or PouchDB?): its whole _changes feed was read instead")
            }
            received += await remote.bytesReceived
            await remote.shutdown()
        }
        if outcome.equal {
            Output.line(["equal": true, "count": .int(Int64(outcome.a.count))])
            return
        }
        func side(_ entry: CollectionDigest.Entry?) -> DocumentValue {
            entry.map { ["rev": .string($0.revisionID), "deleted": .bool($0.isDeleted)] } ?? .null
        }
        for difference in outcome.differences {
            Output.line(["id": .string(difference.id), "a": side(difference.a), "b": side(difference.b)])
        }
        let count = outcome.differences.count
        throw CLIError.user("\(count) \(count == 1 ? "document differs" : "documents differ") (A holds \(outcome.a.count), B \(outcome.b.count); \(received) bytes read from peers)")
    }

    /// A peer's refusal (1) or failure (3), the command's own errors as they are, else a network failure.
    static func commandError(_ error: any Error) -> any Error {
        switch error {
        case let error as CouchError:
            CLIError(message: "peer answered \(error)", exitCode: [401, 403, 404].contains(error.status) ? 1 : 3)
        case is CLIError, is StoreError:
            error
        default:
            CLIError.network("\(error)")
        }
    }

    /// A URL (of any scheme: a wrong one is a usage error), else a directory.
    static func isURL(_ text: String) -> Bool { text.contains("://") }
}
