import Foundation
import Testing
@testable import SyncNodeSync

/// The hostile-input campaign (Tests/hostile/hostile_input.py) against a real `syncnode serve`
/// over TLS: thousands of generated bad requests, slow clients, then checks for 5xx answers, hangs,
/// RSS and the reference documents; all the while the node's mesh syncs with a tarpit.
@Suite(.serialized, Interop.pythonClients) struct HostileInputTests {
    @Test func theNodeSurvivesTheHostileCampaign() async throws {
        let python = Interop.python
        let user = "hostile", password = "s3cret-Pass"
        let idleTimeout = 3
        // Its mesh keeps a replication with a peer that accepts connections and never answers,
        // through the whole campaign.
        let (tarpit, tarpitPort) = try Tarpit.open()
        defer { close(tarpit) }
        let node = try ServeProcess(user: user, password: password, arguments: [
            "--idle-timeout", "\(idleTimeout)", "--max-attachment-mb", "4",
            "--sync-with", "http://127.0.0.1:\(tarpitPort)/db",
        ])
        var arguments = [packageRoot.appendingPathComponent("Tests/hostile/hostile_input.py").path,
                         "https://localhost:\(node.port)", user, password, node.certificate.path,
                         "\(node.process.processIdentifier)", "--idle-timeout", "\(idleTimeout)"]
        // A failure prints its seed; SYNCNODE_HOSTILE_SEED replays it.
        if let seed = ProcessInfo.processInfo.environment["SYNCNODE_HOSTILE_SEED"] { arguments += ["--seed", seed] }
        let (status, text): (Int32, String)
        do {
            (status, text) = try await PythonClientTests.runScript(python, arguments, timeout: 600)
        } catch {
            _ = node.stop()
            throw error
        }
        #expect(status == 0, "hostile_input.py failed:\n\(text)")
        #expect(text.contains("hostile: ok"), "hostile_input.py printed:\n\(text)")
        print(text.split(separator: "\n").first { $0.hasPrefix("hostile: seed") } ?? "")
        #expect(node.process.isRunning, "the node died during the campaign")
        // The tarpit is named with what it failed to do, once, not per retry.
        let told = node.errors.split(separator: "\n").filter { $0.contains("sync 127.0.0.1:\(tarpitPort): interrupted, retrying:") }
        #expect(told.count == 1 && told[0].contains("sent nothing for"), "serve's log about the tarpit: \(told)")
        let stopping = ContinuousClock.now
        #expect(node.stop() == 0)
        let stopped = ContinuousClock.now - stopping
        // Its replication waits on the tarpit: stopping must not (a loose bound for a shared machine).
        #expect(stopped < .seconds(10), "serve took \(stopped) to stop")
        print("hostile: serve stopped \(stopped) after SIGTERM, its replication with a tarpit in flight")
    }
}
