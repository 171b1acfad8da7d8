import ArgumentParser
import Foundation
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

struct Wait: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Wait until the node running on --dir is in sync with its trusted peers.",
        discussion: """
            In sync means, on every keyspace the node syncs with that peer: the node measured it in sync (nothing pending either way, the replicator idle, equal digests), and the node's digest of the keyspace equals the peer's now (GET /KEYSPACE/_digest, asked with the node's certificate). A replicator that looks idle while it is behind is never taken for in sync. A keyspace the node subscribes to (serve --subscribe) counts on the node's measure alone (nothing matching pending either way): it holds a part of the peer's documents, so the digests differ by design. The node's peers, keyspaces and their measured states come from the running node (GET /_node/peers, signed in with its own credential).

            In sync: prints {"in_sync":true,"peers":N,"seconds":S} and exits 0. On timeout: prints {"peer","uuid","in_sync":false,"why"} per peer not in sync and exits 1.

            Example:
              syncnode --dir ~/notes wait --in-sync --peers 2 --timeout 2m && syncnode compare ~/notes 'https://...'
            """)

    @ParentCommand var syncnode: SyncNodeCommand
    @Flag(name: .customLong("in-sync"), help: "Wait until the node is in sync with its peers (the condition `wait` waits for).")
    var inSync = false
    @Option(help: "How many trusted peers must be in sync (default: every trusted peer the node knows, and at least one).")
    var peers: Int?
    @Option(help: "How long to wait: 90s, 15m, 2h.") var timeout = DurationArgument(seconds: 60)

    func validate() throws {
        guard inSync else { throw ValidationError("wait needs --in-sync (the condition it waits for)") }
        if let peers, peers < 1 { throw ValidationError("--peers must be at least 1") }
    }

    func run() async throws {
        let directory = try NodeDirectory(url: syncnode.node.directoryURL)
        guard let running = RunningNode.read(directory: directory) else {
            throw CLIError.user("no node runs on \(directory.url.path): start `syncnode serve` there first")
        }
        let credential = FileManager.default.fileExists(atPath: directory.home.credentialFile.path)
            ? try directory.generatedCredential() : nil
        let check = SyncCheck(directory: directory, running: running, credential: credential, identity: try directory.tlsIdentity())
        defer { check.close() }
        let start = ContinuousClock.now
        let deadline = start + timeout.duration
        var states: [SyncCheck.PeerState] = []
        while true {
            states = try await check.peers()
            let synced = states.filter { $0.why == nil }.count
            if synced >= needed(states) {
                let elapsed = (ContinuousClock.now - start).components
                let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
                Output.line(["in_sync": true, "peers": .int(Int64(synced)), "seconds": .double((seconds * 1000).rounded() / 1000)])
                return
            }
            guard ContinuousClock.now < deadline else { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        for state in states where state.why != nil {
            Output.line(["peer": .string(state.name), "uuid": .string(state.uuid), "in_sync": false, "why": .string(state.why ?? "")])
        }
        let count = states.filter { $0.why == nil }.count
        throw CLIError.user("not in sync after \(timeout.text): \(count) of \(needed(states)) peers in sync")
    }

    /// How many peers must be in sync: --peers, else every trusted one the node knows, at least one.
    private func needed(_ states: [SyncCheck.PeerState]) -> Int { peers ?? max(1, states.count) }
}
