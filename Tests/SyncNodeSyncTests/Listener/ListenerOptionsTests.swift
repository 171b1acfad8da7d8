import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct ListenerOptionsTests {
    @Test func multipartRelatedUploadAsCouchDBsReplicatorSendsIt() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let json = #"{"_id":"m","_rev":"1-abc","v":1,"_attachments":{"z.bin":{"content_type":"application/octet-stream","follows":true,"length":3},"a.txt":{"content_type":"text/plain","follows":true,"length":5}}}"#
            var body = Array("--B\r\nContent-Type: application/json\r\n\r\n\(json)\r\n".utf8)
            body += Array("--B\r\nContent-Type: application/octet-stream\r\n\r\n".utf8) + [0, 13, 10] + Array("\r\n".utf8)  // CRLF inside data
            body += Array("--B\r\nContent-Disposition: attachment; filename=\"a.txt\"\r\n\r\nhello\r\n--B--".utf8)
            let put = try await h.request(.PUT, "/db/m?new_edits=false", bytes: body, headers: [("Content-Type", #"multipart/related; boundary="B""#)])
            #expect(put.status == 201, "\(put.body)")
            #expect(try await h.request(.GET, "/db/m/z.bin").bytes == [0, 13, 10])
            #expect(try await h.request(.GET, "/db/m/a.txt").body == "hello")
            #expect(try await h.request(.GET, "/db/m")["_rev"]?.string == "1-abc")
            let broken = try await h.request(.PUT, "/db/n", bytes: Array("--B\r\nno end".utf8), headers: [("Content-Type", "multipart/related; boundary=B")])
            #expect(broken.status == 400)
            // A header name with a byte above 0x7F (it crashed the multipart library once used here).
            let odd = try await h.request(.PUT, "/db/n", bytes: Array("--B\r\n".utf8) + [0xC3] + Array(": x\r\n\r\n{}\r\n--B--".utf8),
                                          headers: [("Content-Type", "multipart/related; boundary=B")])
            // An unknown part header is ignored, whatever its bytes: the part is read, the document stored.
            #expect(odd.status == 201, "\(odd.status) \(odd.body)")
            #expect(try await h.request(.GET, "/").status == 200)
        }
    }

    /// Two starts at once bind once (on a fixed port, a second bind would fail), and a stop
    /// frees the port for the next listener: nothing of the first is left serving.
    @Test func concurrentStartsBindOnceAndStopFreesThePort() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-starts-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let node = try NodeDirectory(url: dir)
        defer { node.closeAll() }
        let probe = Listener(config: ListenerConfiguration(directory: node, host: "127.0.0.1", disableTLS: true))
        try await probe.start()
        let port = try #require(probe.port)
        await probe.stop()
        let listener = Listener(config: ListenerConfiguration(directory: node, port: port, host: "127.0.0.1", disableTLS: true))
        async let first: Void = listener.start()
        async let second: Void = listener.start()
        _ = try await (first, second)
        #expect(listener.port == port)
        await listener.stop()
        #expect(listener.port == nil)
        let next = Listener(config: ListenerConfiguration(directory: node, port: port, host: "127.0.0.1", disableTLS: true))
        try await next.start()
        #expect(next.port == port)
        await next.stop()
    }

    @Test func corsReadOnlyAndBodyLimit() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-options-\(UUID().uuidString)")
        let node = try NodeDirectory(url: dir)
        _ = try node.database("db", create: true)
        let listener = Listener(config: ListenerConfiguration(
            directory: node, host: "127.0.0.1", disableTLS: true, readOnly: true, allowedOrigins: ["http://app.example"],
            maxRequestBodySize: 1024))
        try await listener.start()
        let port = try #require(listener.port)
        let client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton)
        try await withCleanup({ try? await client.shutdown(); await listener.stop(); node.closeAll(); try? FileManager.default.removeItem(at: dir) }) {
            func call(_ method: String, _ path: String, body: Data? = nil, headers: [String: String] = [:]) async throws -> (Int, [String: String]) {
                var request = HTTPClientRequest(url: "http://127.0.0.1:\(port)\(path)")
                request.method = HTTPMethod(rawValue: method)
                if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
                for (k, v) in headers { request.headers.add(name: k, value: v) }
                let response = try await client.execute(request, timeout: .seconds(120))  // on 2 loaded cores, answers waited a minute behind the run's other tests
                _ = try await response.body.collect(upTo: 1 << 20)
                var h: [String: String] = [:]
                for header in response.headers { h[header.name.lowercased()] = header.value }
                return (Int(response.status.code), h)
            }
            let (preflight, preHeaders) = try await call("OPTIONS", "/db", headers: ["Origin": "http://app.example", "Access-Control-Request-Method": "PUT"])
            #expect(preflight == 204 && preHeaders["access-control-allow-methods"]?.contains("PUT") == true)
            let (_, allowed) = try await call("GET", "/", headers: ["Origin": "http://app.example"])
            #expect(allowed["access-control-allow-origin"] == "http://app.example")
            let (_, other) = try await call("GET", "/", headers: ["Origin": "http://evil.example"])
            #expect(other["access-control-allow-origin"] == nil)
            #expect(try await call("PUT", "/db/x", body: Data("{}".utf8)).0 == 403)
            // Server-side replication into this node is a write too, also between two of its own databases.
            let replicate = Data(#"{"source":"db","target":"copy","create_target":true}"#.utf8)
            #expect(try await call("POST", "/_replicate", body: replicate, headers: ["Content-Type": "application/json"]).0 == 403)
            #expect(node.databaseNames().contains("copy") == false)
            #expect(try await call("GET", "/db").0 == 200)
            #expect(try await call("POST", "/db/_all_docs", body: Data(("{\"keys\":[\"" + String(repeating: "k", count: 4000) + "\"]}").utf8)).0 == 413)
        }
    }
}
