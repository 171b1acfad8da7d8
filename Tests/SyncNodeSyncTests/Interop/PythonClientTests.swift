import Foundation
import Synchronization
import Testing
@testable import SyncNodeSync

/// Independent CouchDB clients from PyPI against a real `syncnode serve`
/// process over HTTPS with Basic auth (scripts in Tests/interop).
@Suite(.serialized, Interop.pythonClients) struct PythonClientTests {
    /// Runs a script to its end (killed after `timeout` seconds: a hung client must not hang
    /// the suite) and returns its exit status and everything it printed. It waits off Swift's
    /// cooperative threads: on 2 cores, a test blocked there for the campaign's minute left the
    /// whole suite one thread, and deadline-bound tests failed.
    static func runScript(_ python: URL, _ arguments: [String], timeout: Double = 120) async throws -> (status: Int32, output: String) {
        try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(with: Swift.Result { try runScriptBlocking(python, arguments, timeout: timeout) })
            }
        }
    }

    private static func runScriptBlocking(_ python: URL, _ arguments: [String], timeout: Double) throws -> (status: Int32, output: String) {
        let run = Process()
        run.executableURL = python
        run.arguments = arguments
        let output = Pipe()
        run.standardOutput = output
        run.standardError = output
        try run.run()
        let watchdog = DispatchWorkItem { if run.isRunning { run.interrupt(); run.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: watchdog)
        let text = String(decoding: PipeIO.readToEnd(output.fileHandleForReading), as: UTF8.self)
        run.waitUntilExit()
        watchdog.cancel()
        return (run.terminationStatus, text)
    }

    @Test(arguments: ["check_couchdb_python.py", "check_pycouchdb.py", "check_aiocouch.py"])
    func clientExercisesPass(_ script: String) async throws {
        let python = Interop.python
        // pycouchdb splits credentials out of the URL without decoding them, so it gets a plain password.
        let user = "tester", password = script == "check_pycouchdb.py" ? "plain-Pass_123" : "p@ss: wörd"
        let node = try ServeProcess(user: user, password: password)
        let (status, text): (Int32, String)
        do {
            (status, text) = try await Self.runScript(python, [packageRoot.appendingPathComponent("Tests/interop/\(script)").path,
                                                         "https://localhost:\(node.port)", user, password, node.certificate.path])
        } catch {
            _ = node.stop()
            throw error
        }
        #expect(status == 0, "\(script) failed:\n\(text)")
        #expect(text.contains(": ok"), "\(script) printed:\n\(text)")
        // SIGTERM ends the node cleanly.
        #expect(node.stop() == 0)
    }

    /// prometheus_client's parser reads `/_node/_local/_prometheus`, and its counters move by
    /// exactly a known workload (Tests/interop/check_prometheus.py).
    @Test func prometheusParsesTheMetrics() async throws {
        let python = Interop.python
        let node = try ServeProcess(user: "ops", password: "metrics-pw", arguments: ["--no-advertise", "--no-browse", "--qr", "none"])
        let (status, text): (Int32, String)
        do {
            (status, text) = try await Self.runScript(python, [packageRoot.appendingPathComponent("Tests/interop/check_prometheus.py").path,
                                                         "https://localhost:\(node.port)", "ops", "metrics-pw", node.certificate.path])
        } catch {
            _ = node.stop()
            throw error
        }
        #expect(status == 0 && text.contains("prometheus: ok"), "check_prometheus.py:\n\(text)")
        #expect(node.stop() == 0)
    }

    /// The dashboard in headless Chromium against two `serve` processes: sign in, pair and see
    /// the peer appear, edit a document and see it arrive on the other node, resolve a conflict,
    /// run a query; each page photographed into .build/dashboard-screenshots
    /// (Tests/interop/check_dashboard.py).
    @Test func theDashboardWorksInABrowser() async throws {
        let python = Interop.python
        let shots = packageRoot.appendingPathComponent(".build/dashboard-screenshots").path
        let (status, text) = try await Self.runScript(
            python, [packageRoot.appendingPathComponent("Tests/interop/check_dashboard.py").path, try syncnodeExecutable().path, shots],
            timeout: 600)
        #expect(status == 0 && text.contains("dashboard: ok"), "check_dashboard.py:\n\(text)")
    }
}
