import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import SyncNodeStore
import SyncNodeSync

/// `SyncNodeBenchmarks listener [N]`: documents/s through `POST _bulk_docs`
/// (batches of 500) and `GET _changes?include_docs=true` over loopback HTTPS
/// with Basic auth, against the store doing the same writes and reads directly.
enum ListenerBenchmark {
    static func run(count: Int) async throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-bench-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let docs = DocumentGenerator.documents(count: count)
        let batches = stride(from: 0, to: count, by: 500).map { start in
            let lines = docs[start..<min(start + 500, count)].map { doc -> String in
                var body = doc.body
                body["_id"] = .string(doc.id)
                return DocumentValue.dictionary(body).toJSON()
            }
            return #"{"docs":["# + lines.joined(separator: ",") + "]}"
        }
        print("listener benchmark: \(count) documents, _bulk_docs batches of 500, loopback HTTPS with Basic auth")

        // The store directly.
        let direct = try Database(name: "direct", config: DatabaseConfiguration(directory: root.appendingPathComponent("direct")))
        let collection = try direct.defaultCollection()
        let storeWrite = try Report.time { try StoreBenchmark.insertAll(docs, into: collection, batchSize: 500) }
        var bytesRead = 0
        let storeRead = try Report.time {
            var since: Int64 = 0
            while true {
                let page = try collection.changes(since: since, limit: 1000, includeBodies: true)
                guard let last = page.last else { break }
                bytesRead += page.reduce(0) { $0 + ($1.body?.utf8.count ?? 0) }
                since = last.sequence
            }
        }
        try direct.close()

        // Through the listener.
        let node = try NodeDirectory(url: root.appendingPathComponent("node"))
        _ = try node.database("bench", create: true)
        let listener = Listener(config: ListenerConfiguration(directory: node, host: "127.0.0.1", authenticator: .users(["bench": "secret"])))
        try await listener.start()
        guard let port = listener.port, let identity = listener.tlsIdentity else { throw SyncError.listenerFailed("no port") }
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(2), read: .seconds(120)))
        configuration.tlsConfiguration = try identity.pinningClientConfiguration()
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
        let auth = "Basic " + Data("bench:secret".utf8).base64EncodedString()
        func send(_ method: HTTPMethod, _ path: String, _ body: String?) async throws -> ByteBuffer {
            var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)\(path)")
            request.method = method
            request.headers.add(name: "Authorization", value: auth)
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body))
            }
            let response = try await client.execute(request, timeout: .seconds(120))
            let data = try await response.body.collect(upTo: 1 << 30)
            guard response.status.code < 300 else { throw SyncError.listenerFailed("\(path): \(response.status) \(String(buffer: data).prefix(200))") }
            return data
        }
        let start = ContinuousClock.now
        for batch in batches { _ = try await send(.POST, "/bench/_bulk_docs", batch) }
        let listenerWrite = seconds(start.duration(to: .now))
        let readStart = ContinuousClock.now
        let feed = try await send(.GET, "/bench/_changes?include_docs=true", nil)
        let listenerRead = seconds(readStart.duration(to: .now))
        let stored = try node.database("bench")?.defaultCollection().count ?? 0
        try await client.shutdown()
        await listener.stop()
        node.closeAll()
        guard stored == count, feed.readableBytes > bytesRead else {
            throw SyncError.listenerFailed("self-check: \(stored) of \(count) stored, \(feed.readableBytes) bytes in the feed")
        }
        Report.compare("_bulk_docs write", count: count, ours: listenerWrite, baseline: storeWrite, target: 2.0, labels: ("listener", "store"))
        Report.compare("_changes read", count: count, ours: listenerRead, baseline: storeRead, target: 2.0, labels: ("listener", "store"))
        print(String(format: "peak RSS %.0f MB", Report.peakRSSMegabytes()))
    }

    static func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
