import ArgumentParser
import Foundation
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

/// `syncnode pair URL`: redeem another node's invitation and keep syncing with it.
struct Pair: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Pair with the node of a pairing URL (as `syncnode invite` prints): redeem its invitation with this node's certificate, trust its certificate, and keep the URL so this node syncs with it (a running node at once, otherwise from its next start). Prints {\"ok\",\"peer\",\"host\",\"port\"}.",
        discussion: "Example:\n  syncnode pair 'https://192.168.1.20:41234/default?uuid=...&fp=...&invite=...&addr=...'")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Argument(help: "The pairing URL.") var url: String
    @Option(help: "This node's name, for the other node's log (default: the host name).") var name: String?

    func validate() throws {
        guard let parsed = try? PairingURL(string: url), parsed.fingerprint != nil else {
            throw ValidationError("'\(PairingURL.redacted(url))' is not a pairing URL with a certificate fingerprint (https://HOST:PORT/DB?uuid=...&fp=...&invite=..., as `syncnode invite` prints)")
        }
    }

    func run() async throws {
        let pairing = try PairingURL(string: url)
        let directory = try NodeDirectory(url: node.directoryURL)
        let trust: TrustStore
        do { trust = try directory.trustedPeers() } catch { throw CLIError.user("\(error)") }
        let running = RunningNode.read(directory: directory)
        let kept: PairingURL
        do {
            kept = try await Pairing.record(
                pairing, directory: directory, trust: trust, name: name ?? ProcessInfo.processInfo.hostName, port: running?.port,
                clientIdentity: try directory.tlsIdentity())
        } catch {
            throw CLIError.redemption(error)
        }
        Output.line(["ok": true, "peer": .string(kept.uuid), "host": .string(kept.host), "port": .int(Int64(kept.port))])
        if running == nil {
            Output.progress("syncnode: paired; no node is serving \(directory.url.path) now: `syncnode serve` syncs with it from its start")
        }
    }
}
