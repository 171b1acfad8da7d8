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
/// Reads are the best of five on both sides (with three, the 100k ratio still ranged from 1.4 to 2.6 between runs); writes happen once.
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
        let storeRead = try Report.best(of: 5) {
            bytesRead = 0
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
        func send(_ method: HTTPMethod, _ path: String, _ body: String?) async throws -> HTTPClientResponse {
            var request = HTTPClientRequest(url: "https://127.0.0.1:\(port)\(path)")
            request.method = method
            request.headers.add(name: "Authorization", value: auth)
            if let body {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(string: body))
            }
            let response = try await client.execute(request, timeout: .seconds(120))
            guard response.status.code < 300 else {
                let text = String(buffer: try await response.body.collect(upTo: 1 << 20))
                throw SyncError.listenerFailed("\(path): \(response.status) \(text.prefix(200))")
            }
            return response
        }
        let listenerWrite = try await Report.timeAsync {
            for batch in batches { _ = try await send(.POST, "/bench/_bulk_docs", batch).body.collect(upTo: 1 << 24) }
        }
        // Timed reads consume the feed as it streams in, as the store side reads
        // page by page without keeping the bodies; an untimed read checks it.
        var streamed = 0
        let listenerRead = try await Report.best(of: 5) {
            var request = try HTTPClient.Request(url: "https://127.0.0.1:\(port)/bench/_changes?include_docs=true")
            request.headers.add(name: "Authorization", value: auth)
            streamed = try await client.execute(request: request, delegate: ByteCounter()).get()
        }
        let feed = try await send(.GET, "/bench/_changes?include_docs=true", nil).body.collect(upTo: 1 << 31)
        let stored = try node.database("bench")?.defaultCollection().count ?? 0
        try await client.shutdown()
        await listener.stop()
        node.closeAll()
        guard stored == count, feed.readableBytes == streamed, feed.readableBytes > bytesRead,
              case .dictionary(let answer) = try DocumentValue(json: String(buffer: feed)),
              case .array(let results)? = answer["results"], results.count == count,
              results.allSatisfy({ if case .dictionary(let row) = $0, case .dictionary? = row["doc"] { true } else { false } }) else {
            throw SyncError.listenerFailed("self-check: \(stored) of \(count) stored, feed of \(feed.readableBytes) bytes (\(streamed) streamed) without every document")
        }
        Report.compare("_bulk_docs write", count: count, ours: listenerWrite, baseline: storeWrite, target: 2.0, labels: ("listener", "store"))
        Report.compare("_changes read", count: count, ours: listenerRead, baseline: storeRead, target: 2.0, labels: ("listener", "store"))
        print(String(format: "peak RSS %.0f MB", Report.peakRSSMegabytes()))
    }
}

/// Counts a response's body bytes as they arrive, on the connection's event
/// loop: the async body sequence costs a task hop per TLS record.
private final class ByteCounter: HTTPClientResponseDelegate, @unchecked Sendable {
    // Touched only on the request's event loop.
    private var bytes = 0
    private var status: HTTPResponseStatus = .ok

    func didReceiveHead(task: HTTPClient.Task<Int>, _ head: HTTPResponseHead) -> EventLoopFuture<Void> {
        status = head.status
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didReceiveBodyPart(task: HTTPClient.Task<Int>, _ buffer: ByteBuffer) -> EventLoopFuture<Void> {
        bytes += buffer.readableBytes
        return task.eventLoop.makeSucceededVoidFuture()
    }

    func didFinishRequest(task: HTTPClient.Task<Int>) throws -> Int {
        guard status == .ok else { throw SyncError.listenerFailed("_changes answered \(status)") }
        return bytes
    }
}
