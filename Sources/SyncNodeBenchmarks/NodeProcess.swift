import Foundation
import SyncNodeStore
import SyncNodeSync

/// `syncnode` child processes, measured whole: wall time, and peak RSS polled from /proc
/// while they run (getrusage's figure for children would include this process's memory,
/// copied at fork).
enum NodeProcess {
    /// The `syncnode` binary built beside this one.
    static func cli() throws -> URL {
        let cli = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("syncnode")
        guard FileManager.default.isExecutableFile(atPath: cli.path) else {
            throw SyncError.invalidConfiguration("\(cli.path) is missing: build the syncnode product too (scripts/bench.sh does)")
        }
        return cli
    }

    struct Finished {
        let status: Int32
        let output: Data
        let seconds: Double
        let peakRSS: Double

        /// `syncnode sync`'s report: `{"pushed","pulled","seconds"}`.
        func syncReport() throws -> (pushed: Int, pulled: Int, seconds: Double) {
            guard status == 0, case .dictionary(let result) = try DocumentValue(json: String(decoding: output, as: UTF8.self)) else {
                throw SyncError.listenerFailed("sync exited \(status): \(String(decoding: output, as: UTF8.self))")
            }
            func number(_ key: String) -> Double {
                switch result[key] {
                case .double(let d)?: return d
                case .int(let i)?: return Double(i)
                default: return 0
                }
            }
            return (Int(number("pushed")), Int(number("pulled")), number("seconds"))
        }
    }

    /// Runs `executable` to its end.
    static func run(_ executable: URL, _ arguments: [String]) throws -> Finished {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe()
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        let start = DispatchTime.now().uptimeNanoseconds
        try process.run()
        let pid = process.processIdentifier
        let peak = Shared(0.0)
        let poller = Thread {
            while process.isRunning {
                let now = Report.peakRSSMegabytes(pid: pid)
                if now.isFinite { peak.set(max(peak.value, now)) }
                usleep(2000)
            }
        }
        poller.start()
        let data = try out.fileHandleForReading.readToEnd() ?? Data()
        process.waitUntilExit()
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - start) / 1e9
        return Finished(status: process.terminationStatus, output: data, seconds: seconds, peakRSS: peak.value)
    }

    /// A `syncnode serve` child, running until ``stop()``.
    final class Server {
        let process: Process
        /// A replication URL of it: the pinned fingerprint of the URL it printed (`listening on
        /// URL`, an invitation), and the admin credential of its directory, so that the figures
        /// time replication, not pairing.
        let url: String

        /// Starts `syncnode --dir DIR serve ARGUMENTS` on loopback, without DNS-SD.
        init(cli: URL, dir: URL, arguments: [String]) throws {
            process = Process()
            process.executableURL = cli
            process.arguments = ["--dir", dir.path, "serve", "--host", "127.0.0.1", "--no-advertise", "--no-browse", "--qr", "none"] + arguments
            let out = Pipe()
            process.standardOutput = out
            process.standardError = FileHandle.nullDevice
            try process.run()
            var line = Data()
            while !line.contains(UInt8(ascii: "\n")) {
                let chunk = out.fileHandleForReading.availableData
                if chunk.isEmpty { break }
                line.append(chunk)
            }
            let text = String(decoding: line, as: UTF8.self).prefix { $0 != "\n" }
            guard let start = text.range(of: "listening on ") else {
                process.terminate()
                throw SyncError.listenerFailed("serve printed \(text.debugDescription)")
            }
            let printed = try PairingURL(string: String(text[start.upperBound...]))
            var components = URLComponents(url: printed.replicationURL(), resolvingAgainstBaseURL: false) ?? URLComponents()
            if let i = arguments.firstIndex(of: "--user"), i + 3 < arguments.count, arguments[i + 2] == "--password" {
                components.user = arguments[i + 1]
                components.password = arguments[i + 3]
            } else {
                let credential = try NodeDirectory(url: dir).generatedCredential()
                components.user = credential.user
                components.password = credential.password
            }
            url = components.string ?? printed.url.absoluteString
        }

        var peakRSS: Double { Report.peakRSSMegabytes(pid: process.processIdentifier) }

        func stop() {
            process.terminate()
            process.waitUntilExit()
        }
    }
}

/// A value written by one thread and read by another.
final class Shared<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T { lock.withLock { stored } }
    func set(_ value: T) { lock.withLock { stored = value } }
}
