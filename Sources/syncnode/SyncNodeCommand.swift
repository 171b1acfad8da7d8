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
        subcommands: [Put.self, Get.self, Delete.self, Import.self, Export.self, Changes.self, QueryCommand.self, Serve.self, Sync.self, Peers.self, Identity.self, User.self, Trust.self])

    /// Exit codes: 0 ok, 1 user error, 2 usage, 3 network/peer failure.
    static func main() async {
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            let level = ProcessInfo.processInfo.environment["SYNCNODE_LOG"].flatMap(Logger.Level.init(rawValue:))
            handler.logLevel = level ?? .warning
            return handler
        }
        let command: ParsableCommand
        do {
            command = try parseAsRoot(globalOptionsMovedAfterCommand(Array(CommandLine.arguments.dropFirst())))
        } catch {
            // --help, -h, help, --version: argument-parser prints them (fullMessage is empty for these) and exits 0.
            if exitCode(for: error) == .success { exit(withError: error) }
            let message = fullMessage(for: error).split(separator: "\n").first.map(String.init) ?? "usage error"
            Output.error(message.hasPrefix("Error: ") ? String(message.dropFirst(7)) : message)
            Foundation.exit(2)
        }
        do {
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                var command = command
                try command.run()
            }
        } catch let error as CLIError {
            Output.error(error.message)
            Foundation.exit(error.exitCode)
        } catch let error as StoreError {
            Output.error(error.description)
            Foundation.exit(1)
        } catch {
            // A bare `syncnode` asks for help: print it.
            if exitCode(for: error) == .success { exit(withError: error) }
            Output.error("\(error)")
            Foundation.exit(1)
        }
    }

    /// `syncnode --dir PATH put ...`: the documented form puts `--dir` before the
    /// command, while argument-parser wants a subcommand's options after its
    /// name, so a leading `--dir` is moved behind the command name.
    static func globalOptionsMovedAfterCommand(_ args: [String]) -> [String] {
        var leading: [String] = []
        var rest = args[...]
        while let first = rest.first {
            if first == "--dir", rest.count >= 2 {
                leading += rest.prefix(2)
                rest = rest.dropFirst(2)
            } else if first.hasPrefix("--dir=") {
                leading.append(first)
                rest = rest.dropFirst()
            } else {
                break
            }
        }
        guard !leading.isEmpty, let command = rest.first else { return args }
        // An unknown command: leave --dir out so the error names the command.
        guard let type = configuration.subcommands.first(where: { $0._commandName == command }) else { return Array(rest) }
        // A command with commands of its own (`user add`): the options go after both names.
        var head = [command], tail = rest.dropFirst()
        if let sub = tail.first, type.configuration.subcommands.contains(where: { $0._commandName == sub }) {
            head.append(sub)
            tail = tail.dropFirst()
        }
        return head + leading + tail
    }
}
