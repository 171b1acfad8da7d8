import Foundation
import SyncNodeMesh
import SyncNodeStore
import SyncNodeSync

/// `syncnode-chat`: a terminal chat room for the machines of a LAN, with no server. Each
/// machine runs a mesh node; nodes find each other through DNS-SD (or a pairing URL), trust
/// each other on first sight, and replicate the room's messages. Lines typed on stdin are
/// messages; messages from others and who comes and goes are printed on stdout.
///
///     syncnode-chat --dir ~/.chat --name alice [--pair URL]
///
/// It uses only the public API of SyncNodeMesh, SyncNodeSync and SyncNodeStore.
@main
struct Chat {
    static func main() async {
        do {
            try await run(Options(CommandLine.arguments.dropFirst()))
        } catch {
            try? FileHandle.standardError.write(contentsOf: Data("syncnode-chat: \(error)\n".utf8))
            exit(1)
        }
    }

    struct Options {
        var directory = "chat-data"
        var name = ProcessInfo.processInfo.hostName
        var pair: String?

        init<Arguments: Collection<String>>(_ arguments: Arguments) throws {
            var rest = arguments.makeIterator()
            while let option = rest.next() {
                guard let value = rest.next() else { throw ChatError("\(option) needs a value") }
                switch option {
                case "--dir": directory = value
                case "--name": name = value
                case "--pair": pair = value
                default: throw ChatError("unknown option \(option); usage: syncnode-chat --dir DIR --name NAME [--pair URL]")
                }
            }
        }
    }

    struct ChatError: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    static func run(_ options: Options) async throws {
        let directory = try NodeDirectory(url: URL(fileURLWithPath: options.directory, isDirectory: true))
        guard let room = try directory.database("chat", create: true) else { throw ChatError("cannot open the chat database") }
        let messages = try room.createCollection(name: "messages", scope: "room")
        var config = try MeshConfiguration(directory: directory, trust: TrustStore(directory: directory, trustOnFirstUse: true))
        config.name = options.name
        config.shared = [.database("chat")]
        let node = MeshNode(configuration: config)
        try await node.start()
        if let pair = options.pair { try await node.pair(with: PairingURL(string: pair)) }
        say("* \(options.name) is online; others can pair with \(node.pairingURL?.url.absoluteString ?? "?")")

        // Who is here: trusted peers appearing and leaving.
        let presence = Task {
            var here: Set<String> = []
            for await peers in node.peerUpdates() {
                let now = Set(peers.filter(\.trusted).map(\.name))
                for name in now.subtracting(here).sorted() { say("* \(name) is here") }
                for name in here.subtracting(now).sorted() { say("* \(name) left") }
                here = now
            }
        }
        // Messages that arrive from peers (our own were echoed when typed).
        let arrivals = messages.addChangeListener { change in
            for changed in change.documents where !changed.isDeleted {
                guard case .replication = changed.origin, let doc = try? messages.document(id: changed.id) else { continue }
                say("<\(doc.string(forKey: "from") ?? "?")> \(doc.string(forKey: "text") ?? "")")
            }
        }
        // Each line typed is a message, until end of input.
        let input = AsyncStream<String> { continuation in
            Thread {
                while let line = readLine() { continuation.yield(line) }
                continuation.finish()
            }.start()
        }
        for await line in input where !line.isEmpty {
            let message = MutableDocument(id: "\(Date().timeIntervalSince1970)-\(UUID().uuidString.prefix(8))")
            message.setString(options.name, forKey: "from")
            message.setString(line, forKey: "text")
            try messages.save(message)
            say("<\(options.name)> \(line)")
        }
        arrivals.remove()
        presence.cancel()
        await node.stop()
        directory.closeAll()
    }

    /// One line on stdout, written at once (a pipe would otherwise hold it).
    static func say(_ line: String) {
        try? FileHandle.standardOutput.write(contentsOf: Data((line + "\n").utf8))
    }
}
