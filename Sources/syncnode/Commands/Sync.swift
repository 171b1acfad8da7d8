import ArgumentParser
import Foundation
import UnixSignals
import SyncNodeStore
import SyncNodeSync

struct Sync: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Replicate a local keyspace with a peer (a pairing URL pins its certificate); prints {\"pushed\",\"pulled\",\"seconds\"}.",
        discussion: "A URL with an invitation (invite=, as `syncnode invite` prints) is redeemed first: this node is then trusted by its certificate, and the same URL keeps working for it.\n\nExample:\n  syncnode sync 'https://192.168.1.20:41234/default?uuid=...&fp=...&invite=...' --continuous")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "The peer's URL: a pairing URL https://host:port/db?uuid=...&fp=...[&invite=...], or https://user:pass@host:port/db for a CouchDB.") var url: String
    @Flag(help: "Only send local changes.") var push = false
    @Flag(help: "Only receive the peer's changes.") var pull = false
    @Flag(help: "Keep replicating until SIGINT/SIGTERM (progress on stderr).") var continuous = false
    @Option(help: "The local keyspace (NAME or NAME.SCOPE.COLLECTION).") var keyspace = Keyspace.defaultDatabase
    @Option(help: "Attempts before a transient failure (connection refused, 5xx) gives up; waits double from 0.2 s.") var attempts = 10
    @Option(help: "Seconds to wait for the peer's answer (its first byte, then each next piece) before an attempt fails; a one-shot sync gives up after retrying twice this long.")
    var timeout = 30
    @Option(help: "resolve: pick each conflict's winner and tombstone the other leaves, alike on every node; keep: leave conflicts as CouchDB does.")
    var conflicts: ConflictPolicy = .resolve
    @Option(help: ArgumentHelp("Only the documents this Mango selector matches, both ways, for example '{\"type\":\"order\"}'. Add {\"$or\":[{\"_deleted\":true},...]} to carry deletions.", valueName: "json"))
    var selector: String?
    @Flag(help: "Send and receive every body as it is: no gzip (faster only where the link is faster than compressing).")
    var noCompression = false

    func validate() throws {
        guard timeout >= 1 else { throw ValidationError("--timeout is whole seconds, at least 1") }
        guard !(push && pull) else { throw ValidationError("--push and --pull exclude each other; give neither for both directions") }
        guard attempts > 0 else { throw ValidationError("--attempts must be at least 1") }
        _ = try PeerURL.parse(url, option: "URL")
        _ = try parsedSelector()
    }

    /// `--selector` as a JSON object.
    private func parsedSelector() throws -> DocumentValue? {
        guard let selector else { return nil }
        guard let value = JSONArgument.selector(selector) else {
            throw ValidationError("--selector must be a JSON object, a Mango selector such as '{\"type\":\"order\"}'")
        }
        return value
    }

    func run() async throws {
        var target = try PeerURL.parse(url, option: "URL")
        let directory = try NodeDirectory(url: node.directoryURL)
        let identity = try directory.tlsIdentity()
        if let pairing = try? PairingURL(string: url), pairing.invitation != nil {
            do {
                let answer = try await InvitationClient.redeem(pairing, identity: identity, uuid: directory.uuid, name: ProcessInfo.processInfo.hostName)
                target = pairing.replicationURL(host: answer.host)
            } catch {
                throw CLIError.redemption(error)
            }
        }
        let (db, collection) = try node.collection(keyspace, create: true)
        defer { try? db.close() }
        var config = ReplicatorConfiguration(collection: collection, target: .url(target))
        config.replicatorType = push ? .push : pull ? .pull : .pushAndPull
        config.maxAttempts = attempts
        config.readTimeout = .seconds(timeout)
        config.maxRetryDuration = .seconds(2 * timeout)
        config.continuous = continuous
        config.conflictResolver = conflicts.resolver
        config.selector = try parsedSelector()
        config.compression = !noCompression
        // The node signs in with its certificate too: a peer that trusts it needs no password.
        config.clientIdentity = identity
        let replicator = Replicator(config: config)
        let reporter = ProgressReporter(label: "sync")
        let token = reporter.attach(to: replicator)
        defer { token.remove() }
        let start = Date()
        // Trapped before the replicator starts: a signal at any point stops it after its batch in flight.
        let signals = await UnixSignalsSequence(trapping: .sigterm, .sigint)
        let run = {
            replicator.start()
            let stopper = Task {
                for await _ in signals {
                    replicator.stop()
                    break
                }
            }
            await replicator.waitUntilStopped()
            stopper.cancel()
        }
        // A one-shot sync is bulk work, perhaps a whole database; a continuous one runs on and on.
        if continuous { await run() } else { try await db.withBulkWrites { await run() } }
        reporter.finish()
        let status = replicator.status
        let seconds = (Date().timeIntervalSince(start) * 1000).rounded() / 1000
        let counts: [String: DocumentValue] = ["pushed": .int(Int64(status.result.pushed)), "pulled": .int(Int64(status.result.pulled)), "seconds": .double(seconds)]
        if let error = status.error {
            // A peer that refused only our writes still let the pull through: say what was done, then why it is not all.
            if let refusal = error as? CouchError, refusal.status == 403, config.replicatorType == .pushAndPull { Output.line(counts) }
            switch error {
            case let error as CouchError:
                throw CLIError(message: "peer answered \(error)", exitCode: error.status == 401 || error.status == 403 ? 1 : 3)
            case let error as StoreError:
                throw error
            default:
                throw CLIError.network("\(error)")
            }
        }
        Output.line(counts)
    }
}
