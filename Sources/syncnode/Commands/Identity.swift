import ArgumentParser
import SyncNodeStore
import SyncNodeSync

struct Identity: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Print the node's UUID and TLS fingerprint (made on first use).")

    @OptionGroup var node: NodeOptions

    func run() throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        let identity = try directory.tlsIdentity()
        Output.line(["uuid": .string(directory.uuid), "fingerprint": .string(identity.fingerprint)])
    }
}
