import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

struct Identity: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the node's UUID and TLS identity (a self-signed P-256 certificate made on first use, valid ten years); --rotate makes a new one.",
        discussion: "Example:\n  syncnode --dir ~/notes identity")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Flag(help: "Retire the identity and make a new one (a key thought leaked, or one near expiry). Peers must then trust the new fingerprint; restart `serve` to use it.")
    var rotate = false

    func run() throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        let (retired, identity) = rotate ? try directory.rotateTLSIdentity() : (nil, try directory.tlsIdentity())
        var line: [String: DocumentValue] = [
            "uuid": .string(directory.uuid), "fingerprint": .string(identity.fingerprint), "key": "ECDSA P-256",
            "expires": identity.expires.map { .string(ISO8601DateFormatter().string(from: $0)) } ?? .null,
        ]
        if let retired {
            line["retired"] = .string(retired)
            Output.progress("""
                syncnode: the identity \(retired) is retired (kept in \(directory.url.path)/.node/tls-retired-*). \
                On each peer that trusted it: syncnode trust remove \(retired.hasPrefix("-") ? "-- " : "")\(retired); \
                \(TrustStore.addCommand(identity.fingerprint)). Pairing URLs with fp=\(retired) no longer connect: \
                share the new one. Restart serve to use the new identity.
                """)
        }
        Output.line(line)
    }
}
