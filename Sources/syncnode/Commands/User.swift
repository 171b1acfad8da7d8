import ArgumentParser
import Foundation
import SyncNodeStore
import SyncNodeSync

/// `syncnode user add|remove|list`: the people who may sign in, kept hashed in DIR/.node/users.json.
struct User: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Manage who may sign in to the node with a password (salted PBKDF2 hashes in DIR/.node/users.json; a running node sees changes at once).",
        discussion: "Example:\n  SYNCNODE_PASSWORD=secret syncnode user add ann --role editors",
        subcommands: [Add.self, Remove.self, List.self])

    struct Add: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a user or set a new password. The password comes from $SYNCNODE_PASSWORD, else a prompt (or one line of stdin).",
            discussion: "Example:\n  syncnode user add bob --generate --admin")

        @ParentCommand var syncnode: SyncNodeCommand
        var node: NodeOptions { syncnode.node }
        @Argument(help: "The user name (no ':').") var name: String
        @Flag(help: "Make a random password and print it once.") var generate = false
        @Option(name: .customLong("role"), help: "A role, matched against databases' _security (repeatable).") var roles: [String] = []
        @Flag(help: "A server admin: every database, and creating and deleting them (role _admin).") var admin = false

        func run() throws {
            let password = try generate ? UserStore.randomPassword() : Self.readPassword(for: name)
            let store = try User.store(node)
            do { try store.add(name, password: password, roles: (admin ? ["_admin"] : []) + roles) } catch { throw CLIError.user("\(error)") }
            Output.line(generate ? ["ok": true, "user": .string(name), "password": .string(password)] : ["ok": true, "user": .string(name)])
        }

        static func readPassword(for name: String) throws -> String {
            if let password = Serve.environmentPassword { return password }
            let text: String?
            if isatty(STDIN_FILENO) != 0 {
                text = getpass("Password for \(name): ").map { String(cString: $0) }
            } else {
                text = readLine(strippingNewline: true)
            }
            guard let text, !text.isEmpty else { throw CLIError.user("no password given (set SYNCNODE_PASSWORD, type it, or use --generate)") }
            return text
        }
    }

    struct Remove: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove a user: its password and session cookies stop working.", discussion: "Example:\n  syncnode user remove bob")

        @ParentCommand var syncnode: SyncNodeCommand
        var node: NodeOptions { syncnode.node }
        @Argument(help: "The user name.") var name: String

        func run() throws {
            let removed: Bool
            do { removed = try User.store(node).remove(name) } catch { throw CLIError.user("\(error)") }
            guard removed else { throw CLIError.user("no user '\(name)'") }
            Output.line(["ok": true, "user": .string(name)])
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Print the users as JSON lines {\"user\",\"roles\"} (never a password or hash).", discussion: "Example:\n  syncnode user list")

        @ParentCommand var syncnode: SyncNodeCommand
        var node: NodeOptions { syncnode.node }

        func run() throws {
            let store = try User.store(node)
            do {
                for name in try store.names() {
                    Output.line(["user": .string(name), "roles": .array((try store.roles(of: name) ?? []).map { .string($0) })])
                }
            } catch {
                throw CLIError.user("\(error)")
            }
        }
    }

    static func store(_ node: NodeOptions) throws -> UserStore {
        try NodeDirectory(url: node.directoryURL).users
    }
}
