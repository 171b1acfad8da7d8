import Foundation
import Testing
@testable import SyncNodeSync

/// The hostile-input campaign (Tests/hostile/hostile_input.py) against a real `syncnode serve`
/// over TLS: thousands of generated bad requests, slow clients, then checks for 5xx answers, hangs,
/// RSS and the reference documents.
@Suite(.serialized) struct HostileInputTests {
    @Test func theNodeSurvivesTheHostileCampaign() async throws {
        let python = try packageExecutable(".venv/bin/python")
        let user = "hostile", password = "s3cret-Pass"
        let idleTimeout = 3
        let node = try ServeProcess(user: user, password: password, arguments: ["--idle-timeout", "\(idleTimeout)", "--max-attachment-mb", "4"])
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
        #expect(node.stop() == 0)
    }
}
