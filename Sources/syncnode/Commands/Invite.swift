import ArgumentParser
import Foundation
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

/// `syncnode invite`: an invitation to pair, as a URL and QR code that carry no password.
struct Invite: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Invite a device: print a pairing URL and its QR code that the running node honours at once. The device that redeems it (syncnode pair URL) is trusted by its certificate with the invitation's scope; no password is shown or shared.",
        discussion: """
            Defaults: one use, valid 15 minutes, write access to every keyspace the node shares. The URL's first line on \
            stdout; the QR code follows on a terminal.

            Examples:
              syncnode invite --keyspace notes --access read --expires 1h --note "lab tablet"
              syncnode invite --list
              syncnode invite --revoke 3f2a9c01
            """)

    @ParentCommand var syncnode: SyncNodeCommand
    var node: NodeOptions { syncnode.node }
    @Option(name: .customLong("keyspace"), help: "A keyspace the invited device may reach (db, or db.scope.collection; repeatable). Default: every one.")
    var keyspaces: [Keyspace] = []
    @Option(help: "read or write.") var access: PeerScope.Access = .write
    @Option(help: "How long it is honoured: 90s, 15m, 2h, 7d (at most a year).") var expires = DurationArgument(argument: "15m")!
    @Option(help: "How many devices may redeem it, or 'any'.") var uses = "1"
    @Option(help: "A note kept beside it (e.g. who it is for).") var note = ""
    @Flag(help: "List the invitations kept (pending, and used, expired or revoked ones for a day) as JSON lines.") var list = false
    @Option(help: "Revoke the invitation with this ID (or a unique prefix): it is honoured no more, and the devices that redeemed it are untrusted.")
    var revoke: String?
    @Option(help: "How to draw the QR code: light-on-dark, dark-on-light, or none (the default when stdout is not a terminal).")
    var qr: Serve.QRStyle?

    func validate() throws {
        if list && revoke != nil { throw ValidationError("--list and --revoke exclude each other") }
        guard uses == "any" || (Int(uses).map { $0 >= 1 } ?? false) else { throw ValidationError("--uses takes a number from 1, or 'any'") }
        try PeerScope(keyspaces: keyspaces.isEmpty ? nil : keyspaces, access: access).validate()
    }

    func run() throws {
        let directory = try NodeDirectory(url: node.directoryURL)
        let store = directory.invitations
        if list {
            do { for invitation in try store.list() { Output.line(Self.fields(invitation.json)) } } catch { throw CLIError.user("\(error)") }
            return
        }
        if let revoke {
            let revoked: (invitation: Invitation, untrusted: [String])?
            do { revoked = try store.revoke(id: revoke, untrustingIn: try directory.trustedPeers()) } catch { throw CLIError.user("\(error)") }
            guard let revoked else { throw CLIError.user("no invitation '\(revoke)' (syncnode invite --list shows them)") }
            Output.line(["ok": true, "invitation": .string(revoked.invitation.id), "untrusted": .array(revoked.untrusted.map { .string($0) })])
            return
        }
        guard let running = RunningNode.read(directory: directory) else {
            throw CLIError.user("no node is serving \(directory.url.path): start `syncnode serve` first (an invitation names the address it listens on)")
        }
        guard running.fingerprint != nil else {
            throw CLIError.user("the node serves plain HTTP (--no-tls): peers cannot be trusted by certificate, so it cannot invite")
        }
        let scope = PeerScope(keyspaces: keyspaces.isEmpty ? nil : keyspaces, access: access)
        let made: (invitation: Invitation, token: String)
        do {
            made = try store.create(scope: scope, lifetime: expires.duration, uses: uses == "any" ? nil : Int(uses), note: note)
        } catch { throw CLIError.user("\(error)") }
        let url = running.pairingURL(uuid: directory.uuid, invitation: made.token, keyspace: keyspaces.first).url.absoluteString
        // An explicit --qr draws even into a pipe; by default only a terminal gets the code.
        Output.write(url + "\n" + (qr?.art(url, onlyOnTerminal: false) ?? Serve.QRStyle.lightOnDark.art(url)), to: .standardOutput)
        Output.progress("syncnode: invitation \(made.invitation.id): \(scope), \(made.invitation.usesDescription), until \(ISO8601DateFormatter().string(from: made.invitation.expires)); the device that scans it runs `syncnode pair URL`")
    }

    private static func fields(_ value: DocumentValue) -> [String: DocumentValue] {
        if case .dictionary(let fields) = value { return fields }
        return [:]
    }
}

extension PeerScope.Access: ExpressibleByArgument {}
