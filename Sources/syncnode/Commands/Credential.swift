import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

/// `syncnode credential`: the admin credential the node made itself, for Basic-auth clients.
struct Credential: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the node's own admin credential {\"user\",\"password\"} (kept in DIR/.node/credential.json, mode 0600; made on first use) for clients that sign in with a password: curl, CouchDB, PouchDB. It is a server admin's: keep it to yourself, and pair devices with `syncnode invite` instead.",
        discussion: "Example:\n  curl -k -u \"$(syncnode credential --basic)\" https://127.0.0.1:6984/_all_dbs")

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Flag(help: "Print USER:PASSWORD alone (for curl -u).") var basic = false

    func run() throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        let own = try directory.generatedCredential()
        if basic {
            Output.write("\(own.user):\(own.password)\n", to: .standardOutput)
        } else {
            Output.line(["user": .string(own.user), "password": .string(own.password)])
        }
    }
}
