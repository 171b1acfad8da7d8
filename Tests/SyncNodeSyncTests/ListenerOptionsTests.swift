import AsyncHTTPClient
import Crypto
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
        }
    }

    /// A multipart upload streams its attachments into the blob store: one far larger than the
    /// JSON body limit is stored; one whose bytes do not match its digest or length, or whose
    /// part never arrives, is refused and leaves nothing behind.
    @Test func multipartUploadStreamsPastTheBodyLimitAndChecksContent() async throws {
        let h = try await ListenerHarness(maxRequestBodySize: 64 << 10)
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let bytes = (0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) }
            let md5 = "md5-" + Data(Insecure.MD5.hash(data: bytes)).base64EncodedString()
            func upload(_ id: String, digest: String, length: Int, parts: [[UInt8]]) async throws -> ListenerHarness.Reply {
                let json = #"{"_id":"\#(id)","_rev":"1-abc","_attachments":{"big.bin":{"content_type":"application/octet-stream","follows":true,"length":\#(length),"digest":"\#(digest)"}}}"#
                var body = Array("--B\r\nContent-Type: application/json\r\n\r\n\(json)".utf8)
                for part in parts { body += Array("\r\n--B\r\n\r\n".utf8) + part }
                body += Array("\r\n--B--".utf8)
                return try await h.request(.PUT, "/db/\(id)?new_edits=false", bytes: body, headers: [("Content-Type", "multipart/related; boundary=B")])
            }
            let stored = try await upload("ok", digest: md5, length: bytes.count, parts: [bytes])
            #expect(stored.status == 201, "\(stored.body)")
            #expect(try await h.request(.GET, "/db/ok/big.bin").bytes == bytes)
            #expect(try await h.request(.GET, "/db/ok")["_attachments"]?["big.bin"]?["digest"]?.string == md5)

            var corrupted = bytes
            corrupted[1000] ^= 0xFF
            let wrongDigest = try await upload("bad", digest: md5, length: bytes.count, parts: [corrupted])
            #expect(wrongDigest.status == 400 && wrongDigest.body.contains("digest"), "\(wrongDigest.body)")
            let wrongLength = try await upload("short", digest: md5, length: bytes.count + 1, parts: [bytes])
            #expect(wrongLength.status == 400, "\(wrongLength.body)")
            let missingPart = try await upload("none", digest: md5, length: bytes.count, parts: [])
            #expect(missingPart.status == 400 && missingPart.body.contains("big.bin"), "\(missingPart.body)")
            for id in ["bad", "short", "none"] { #expect(try await h.request(.GET, "/db/\(id)").status == 404) }
            // Only the good upload's content is a blob; nothing half-written is left.
            let blobs = try FileManager.default.contentsOfDirectory(atPath: h.directory.appendingPathComponent("db.syncnode/blobs").path)
            #expect(blobs.filter { !$0.hasSuffix(".md5") }.count == 1, "\(blobs)")
        }
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
                let response = try await client.execute(request, timeout: .seconds(10))
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
