import ArgumentParser
import Foundation
import Synchronization
import SyncNodeDiscovery
import SyncNodeStore
import SyncNodeSync

struct Peers: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Browse DNS-SD for nodes that answer; prints JSON lines {\"name\",\"uuid\",\"host\",\"port\",\"dbs\",\"tls\",\"fp\"} as they are found.",
        discussion: "Example:\n  syncnode peers --timeout 5")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Option(help: "How long to look, in seconds.") var timeout: Double = 3
    @Option(help: "HTTP Basic user name to check peers with (with --password).") var user: String?
    @Option(help: "HTTP Basic password (with --user).") var password: String?

    func validate() throws {
        guard timeout > 0, timeout <= 86_400 else { throw ValidationError("--timeout must be between 0 and 86400 seconds") }
        guard (user == nil) == (password == nil) else { throw ValidationError("--user and --password go together") }
    }

    func run() async throws {
        // This node's own service is not a peer (when the data directory exists).
        let own = try? String(contentsOf: NodeHome(directory: node.directoryURL).uuidFile, encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let unavailable = Mutex<String?>(nil)
        let browser = try Browser(
            ignoring: own, authenticator: BasicAuthenticator(user: user, password: password),
            onStatus: { status in
                // The latest status counts: a daemon that came up meanwhile answered, even with no peers.
                switch status {
                case .unavailable(let reason): unavailable.withLock { $0 = reason }
                case .running: unavailable.withLock { $0 = nil }
                }
            })
        browser.start()
        let stopper = Task {
            try? await Task.sleep(for: .milliseconds(Int(timeout * 1000)))
            await browser.stop()
        }
        var printed = Set<String>()
        for await event in browser.events {
            guard case .appeared(let peer) = event, printed.insert(peer.uuid).inserted else { continue }
            let line = DocumentValue.dictionary([
                "name": .string(peer.name), "uuid": .string(peer.uuid), "host": .string(peer.host), "port": .int(Int64(peer.port)),
                "dbs": .array(peer.record.keyspaces.map { .string($0.name) }), "tls": .bool(peer.record.tls),
                "fp": peer.record.fingerprint.map { .string($0) } ?? .null,
            ]).toJSON()
            // Unbuffered: a script reads each peer as it is found. A closed pipe ends the browsing.
            guard Output.write(line + "\n", to: .standardOutput) else {
                stopper.cancel()
                break
            }
        }
        await stopper.value
        if printed.isEmpty, let reason = unavailable.withLock({ $0 }) {
            throw CLIError.network("DNS-SD unavailable: \(reason)")
        }
    }
}
