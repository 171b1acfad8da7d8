import ArgumentParser
import Foundation
import Logging
import SyncNodeStore

@main
struct SyncNodeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "syncnode",
        abstract: "An embedded document database node with CouchDB-protocol LAN sync.",
        discussion: "Every command takes --dir PATH (default $SYNCNODE_DIR, else ./syncnode-data). Exit codes: 0 ok, 1 user error, 2 usage, 3 network.\n\nExample:\n  syncnode put default greeting '{\"text\":\"hello\"}' && syncnode serve",
        // Stamped at build time by Plugins/VersionStamp (scripts/version.sh).
        version: buildVersion,
        subcommands: [Put.self, Get.self, Delete.self, Import.self, Export.self, Changes.self, Conflicts.self, Resolve.self, QueryCommand.self, Serve.self, Sync.self, Compare.self, Wait.self, Peers.self, Invite.self, Pair.self, Identity.self, Credential.self, User.self, Trust.self,
                      Info.self, Compact.self, Purge.self, IndexCommand.self])

    /// `--dir`, given before the command; commands read it through `@ParentCommand`.
    @OptionGroup var node: NodeOptions

    /// Exit codes: 0 ok, 1 user error, 2 usage, 3 network/peer failure.
    static func main() async {
        LoggingSystem.bootstrap { label in
            let level = ProcessInfo.processInfo.environment["SYNCNODE_LOG"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
            if Journal.isStandardError { return JournalLogHandler(label: label, logLevel: level) }
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let command: ParsableCommand
        do {
            command = try parseAsRoot(FingerprintArgument.separated(Array(CommandLine.arguments.dropFirst())))
        } catch {
            // --help, -h, help, --version: argument-parser prints them (fullMessage is empty for these) and exits 0.
            if exitCode(for: error) == .success { exit(withError: error) }
            Output.error(message(for: error).split(separator: "\n").first.map(String.init) ?? "usage error")
            Foundation.exit(2)
        }
        do {
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var command = command
                try command.run()
            }
        } catch {
            // A bare `syncnode` asks for help: print it.
            if exitCode(for: error) == .success { exit(withError: error) }
            let reported = CLIError(error)
            Output.error(reported.message)
            Foundation.exit(reported.exitCode)
        }
    }
}
