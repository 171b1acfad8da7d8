import CompressNIO
import Foundation
import NIOCore
import Synchronization
import NIOHTTP1
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// Gzip between nodes: which answers the listener encodes, that they decode to the plain answer,
/// and the bytes a replication moves with and without it (counted, not timed).
@Suite struct AnswerCompressionTests {
    static let gzip = [("Accept-Encoding", "gzip")]

    /// `count` documents of about 1 KB of text, as apps write them.
    static func fill(_ collection: DocumentCollection, count: Int, prefix: String = "d") throws {
        let words = ["order", "shipped", "pending", "warehouse", "Lyon", "Porto", "customer", "invoice", "paid"]
        try collection.database.inBatch {
            for i in 0..<count {
                let note = (0..<150).map { words[($0 * 7 + i) % words.count] }.joined(separator: " ")
                try collection.save(try MutableDocument(id: "\(prefix)\(i)", data: ["n": i, "note": note, "type": "order"]))
            }
        }
    }

    static func gunzip(_ bytes: [UInt8]) throws -> String {
        String(decoding: try gunzipBytes(bytes), as: UTF8.self)
    }

    static func gunzipBytes(_ bytes: [UInt8]) throws -> [UInt8] {
        var buffer = ByteBuffer(bytes: bytes)
        return Array(buffer: try buffer.decompress(with: .gzip(), maxSize: 64 << 20))
    }

    @Test func theLargeProtocolAnswersAreGzipEncodedAndDecodeToThePlainOnes() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let db = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try Self.fill(db, count: 50)
            let rev = try #require(try db.document(id: "d1")?.revisionID)
            let bulkGet = #"{"docs":[{"id":"d1","rev":"\#(rev)"},{"id":"d2"}]}"#
            let revsDiff = "{" + (0..<40).map { #""x\#($0)":["1-0123456789abcdef0123456789abcdef"]"# }.joined(separator: ",") + "}"
            let cases: [(HTTPMethod, String, String?)] = [
                (.GET, "/db/_changes?include_docs=true", nil),
                (.GET, "/db/_changes?feed=longpoll&since=0&include_docs=true", nil),
                (.GET, "/db/_all_docs?include_docs=true", nil),
                (.POST, "/db/_bulk_get?revs=true", bulkGet),
                (.POST, "/db/_revs_diff", revsDiff),
                (.POST, "/db/_find", #"{"selector":{"type":"order"}}"#),
            ]
            for (method, path, body) in cases {
                let plain = try await h.request(method, path, body: body)
                let encoded = try await h.request(method, path, body: body, headers: Self.gzip)
                #expect(plain.status == 200 && encoded.status == 200, "\(path)")
                #expect(plain.headers["content-encoding"] == nil, "\(path)")
                #expect(encoded.headers["content-encoding"] == "gzip", "\(path)")
                #expect(encoded.headers["vary"] == "Accept-Encoding" && plain.headers["vary"] == "Accept-Encoding", "\(path)")
                #expect(encoded.bytes.count < plain.bytes.count / 2, "\(path): \(encoded.bytes.count) of \(plain.bytes.count) bytes")
                #expect(try Self.gunzip(encoded.bytes) == plain.body, "\(path)")
            }
        }
    }

    @Test func answersAreLeftPlainWhereEncodingGainsNothingOrIsNotTaken() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let db = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try Self.fill(db, count: 20)
            let big = "/db/_all_docs?include_docs=true"
            // Refused, or not named, in the client's Accept-Encoding.
            for accepted in ["identity", "gzip;q=0", "gzip;q=0, *", "br, deflate", "*;q=0"] {
                let reply = try await h.request(.GET, big, headers: [("Accept-Encoding", accepted)])
                #expect(reply.status == 200 && reply.headers["content-encoding"] == nil, "\(accepted)")
            }
            for accepted in ["*", "GZIP;q=0.5", "br, x-gzip"] {
                let reply = try await h.request(.GET, big, headers: [("Accept-Encoding", accepted)])
                #expect(reply.headers["content-encoding"] == "gzip", "\(accepted)")
            }
            // A small answer of known length, a document, an error, inline attachment content.
            let small = try await h.request(.POST, "/db/_revs_diff", body: #"{"d1":["9-x"]}"#, headers: Self.gzip)
            #expect(small.status == 200 && small.headers["content-encoding"] == nil)
            let document = try await h.request(.GET, "/db/d1", headers: Self.gzip)
            #expect(document.status == 200 && document.headers["content-encoding"] == nil)
            let missing = try await h.request(.GET, "/nothere/_all_docs", headers: Self.gzip)
            #expect(missing.status == 404 && missing.headers["content-encoding"] == nil && missing.body.contains("not_found"))
            let inline = try await h.request(.POST, "/db/_bulk_get?attachments=true", body: #"{"docs":[{"id":"d1"},{"id":"d2"}]}"#, headers: Self.gzip)
            #expect(inline.status == 200 && inline.headers["content-encoding"] == nil)
        }
    }

    @Test func aContinuousFeedIsLeftPlainForClientsThatReadItLineByLine() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let db = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try Self.fill(db, count: 20)
            let reply = try await h.request(.GET, "/db/_changes?feed=continuous&timeout=100&include_docs=true", headers: Self.gzip)
            #expect(reply.status == 200 && reply.headers["content-encoding"] == nil)
            #expect(reply.body.contains(#""id":"d19""#))
        }
    }

    /// What one replication moves, as the listener counted it: (sent, received) body bytes.
    static func moved(_ h: ListenerHarness, _ run: () async throws -> ReplicationResult) async throws -> (sent: Int, received: Int, result: ReplicationResult) {
        let before = h.listener.status
        let result = try await run()
        let after = h.listener.status
        return (after.bytesSent - before.bytesSent, after.bytesReceived - before.bytesReceived, result)
    }

    @Test func aPullAndAPushBetweenNodesMoveAboutAQuarterOfTheBytes() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let remote = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try Self.fill(remote, count: 400)
            var pulls: [Bool: (sent: Int, received: Int, result: ReplicationResult)] = [:]
            var pushes: [Bool: (sent: Int, received: Int, result: ReplicationResult)] = [:]
            for compression in [true, false] {
                let peer = try ReplicatorTests.Peer()
                var config = ReplicatorConfiguration(collection: peer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
                config.compression = compression
                config.replicatorType = .pull
                pulls[compression] = try await Self.moved(h) { try await Replicator(config: config).runOnce() }
                #expect(try ReplicatorTests.state(peer.collection) == ReplicatorTests.state(remote))
            }
            for compression in [true, false] {
                let writer = try ReplicatorTests.Peer()
                try Self.fill(writer.collection, count: 400, prefix: compression ? "gz" : "plain")
                var config = ReplicatorConfiguration(collection: writer.collection, target: .url(try ReplicatorTests.pairingURL(h)))
                config.compression = compression
                config.replicatorType = .push
                pushes[compression] = try await Self.moved(h) { try await Replicator(config: config).runOnce() }
                #expect(try remote.document(id: compression ? "gz399" : "plain399") != nil)
            }
            let (gzipPull, plainPull) = (try #require(pulls[true]), try #require(pulls[false]))
            #expect(gzipPull.result.pulled == 400 && plainPull.result.pulled == 400)
            #expect(Double(gzipPull.sent) <= 0.35 * Double(plainPull.sent), "pull answers: \(gzipPull.sent) against \(plainPull.sent) bytes")
            let (gzipPush, plainPush) = (try #require(pushes[true]), try #require(pushes[false]))
            #expect(gzipPush.result.pushed == 400 && plainPush.result.pushed == 400)
            #expect(Double(gzipPush.received) <= 0.35 * Double(plainPush.received), "push bodies: \(gzipPush.received) against \(plainPush.received) bytes")
        }
    }

    @Test func gzipBodiesGoOnlyToAPeerThatEncodesItsAnswers() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let transport = HTTPTransport(root: h.base, client: h.client, headers: [("Authorization", ListenerHarness.authorization)],
                                          timeouts: PeerTimeouts(connect: .seconds(5), read: .seconds(30)))
            _ = try await transport.expect(.PUT, "/db")
            let body = "{\"docs\":[" + (0..<30).map { #"{"_id":"b\#($0)","note":"a body long enough to be worth encoding"}"# }.joined(separator: ",") + "]}"
            // Before any encoded answer: sent as it is.
            #expect(transport.request(.POST, "/db/_bulk_docs", body: .json(body)).headers["Content-Encoding"].isEmpty)
            let before = h.listener.status.bytesReceived
            _ = try await transport.expect(.POST, "/db/_bulk_docs", json: body)
            let plain = h.listener.status.bytesReceived - before
            // An encoded answer shows the peer is a node: bodies go encoded from then on, and arrive whole.
            _ = try await transport.expect(.GET, "/db/_all_docs?include_docs=true")
            #expect(transport.request(.POST, "/db/_bulk_docs", body: .json(body)).headers["Content-Encoding"] == ["gzip"])
            let again = h.listener.status.bytesReceived
            let edited = body.replacingOccurrences(of: "\"_id\":\"b", with: "\"_id\":\"c")
            _ = try await transport.expect(.POST, "/db/_bulk_docs", json: edited)
            #expect(h.listener.status.bytesReceived - again < plain / 2)
            let db = try #require(try h.node.database("db")?.defaultCollection())
            #expect(try db.document(id: "c29")?.string(forKey: "note") == "a body long enough to be worth encoding")
        }
    }

    @Test func aPeerThatRefusesAGzipBodyGetsPlainOnesFromThenOn() async throws {
        // As behind a proxy that encodes answers for a server that takes no encoded body: the
        // first `_bulk_docs` is refused with 415, whatever its coding.
        let refusals = Mutex(1)
        let injector = FaultInjector { method, path in
            guard method == "POST", path.hasSuffix("/_bulk_docs") else { return nil }
            return refusals.withLock { left in
                defer { left = max(0, left - 1) }
                return left > 0 ? 415 : nil
            }
        }
        let h = try await ListenerHarness(faultInjector: injector)
        try await withCleanup({ await h.shutdown() }) {
            let transport = HTTPTransport(root: h.base, client: h.client, headers: [("Authorization", ListenerHarness.authorization)],
                                          timeouts: PeerTimeouts(connect: .seconds(5), read: .seconds(30)))
            _ = try await transport.expect(.PUT, "/db")
            let db = try #require(try h.node.database("db")?.defaultCollection())
            try Self.fill(db, count: 20)
            _ = try await transport.expect(.GET, "/db/_all_docs?include_docs=true")
            let body = "{\"docs\":[" + (0..<30).map { #"{"_id":"b\#($0)","note":"a body long enough to be worth encoding"}"# }.joined(separator: ",") + "]}"
            #expect(transport.request(.POST, "/db/_bulk_docs", body: .json(body)).headers["Content-Encoding"] == ["gzip"])
            // Refused encoded, sent again as it is, and stored.
            _ = try await transport.expect(.POST, "/db/_bulk_docs", json: body)
            #expect(try db.document(id: "b29") != nil)
            #expect(refusals.withLock { $0 } == 0)
            // Encoded answers go on; bodies stay plain.
            _ = try await transport.expect(.GET, "/db/_all_docs?include_docs=true")
            #expect(transport.request(.POST, "/db/_bulk_docs", body: .json(body)).headers["Content-Encoding"].isEmpty)
        }
    }

    @Test func aBrokenGzipBodyIsRefusedWithItsReason() throws {
        let text = String(repeating: "a line of a body that compresses\n", count: 2000)
        let whole = Array(buffer: try GzipEncoder.encode(ByteBuffer(string: text)))
        // Fed a few bytes at a time, it decodes to the same text.
        let decoder = try GzipDecoder(limit: 1 << 20)
        var out = ""
        for start in stride(from: 0, to: whole.count, by: 7) {
            try decoder.feed(ByteBuffer(bytes: whole[start..<min(start + 7, whole.count)])) { out += String(buffer: $0) }
        }
        try decoder.finish()
        #expect(out == text)
        func reason(_ bytes: [UInt8], limit: Int = 1 << 20) -> String {
            do {
                _ = try GzipDecoder.decode(ByteBuffer(bytes: bytes), limit: limit)
                return "decoded"
            } catch let error as CouchError {
                return "\(error.status) \(error.reason)"
            } catch {
                return "\(error)"
            }
        }
        var crc = whole
        crc[crc.count - 6] ^= 0xFF
        #expect(reason(crc).hasPrefix("400") && reason(crc).contains("CRC"), "\(reason(crc))")
        #expect(reason(whole + [1, 2, 3]).contains("goes on after the end"))
        #expect(reason(whole + whole).contains("goes on after the end"))
        #expect(reason(Array(whole.dropLast(3))).contains("truncated"))
        #expect(reason(Array(whole.prefix(whole.count / 2))).contains("truncated"))
        #expect(reason(Array("not gzip at all, not even close".utf8)).contains("not gzip data"))
        #expect(reason(whole, limit: 1000).hasPrefix("413"))
    }

    @Test func anAcceptEncodingIsReadAsHTTPSaysIt() {
        #expect(AnswerCompressionMiddleware.acceptsGzip("gzip"))
        #expect(AnswerCompressionMiddleware.acceptsGzip("deflate, gzip;q=1.0, *;q=0.5"))
        #expect(AnswerCompressionMiddleware.acceptsGzip("*"))
        #expect(!AnswerCompressionMiddleware.acceptsGzip(nil))
        #expect(!AnswerCompressionMiddleware.acceptsGzip(""))
        #expect(!AnswerCompressionMiddleware.acceptsGzip("gzip;q=0"))
        #expect(!AnswerCompressionMiddleware.acceptsGzip("*, gzip;q=0"))
        #expect(!AnswerCompressionMiddleware.acceptsGzip("br"))
    }

    @Test func anEncodedStreamDecodesPieceByPieceAndWhole() throws {
        let encoder = try GzipEncoder()
        var text = ""
        var stream = ByteBuffer()
        for i in 0..<200 {
            let piece = String(repeating: "line \(i) of a feed\n", count: i % 5 + 1)
            text += piece
            var encoded = try encoder.encode(ByteBuffer(string: piece))
            // Each piece is flushed: what has been sent so far decodes to what was written so far.
            stream.writeBuffer(&encoded)
            if i % 50 == 0 {
                var sync = stream
                var out = ByteBufferAllocator().buffer(capacity: 1 << 20)
                do {
                    try ZlibDecompressor(algorithm: .gzip).inflate(from: &sync, to: &out)
                } catch let error as CompressNIOError where error == .inputBufferOverflow || error == .bufferOverflow {
                    // The stream has not ended: what it gave so far is in `out`.
                }
                #expect(String(buffer: out) == text)
            }
        }
        var end = try encoder.finish()
        stream.writeBuffer(&end)
        #expect(try Self.gunzip(Array(buffer: stream)) == text)
        #expect(String(buffer: try GzipDecoder.decode(stream, limit: 1 << 20)) == text)
        // Input larger than zlib's bound for one call's output grows the buffer instead of failing.
        let random = (0..<300_000).map { _ in UInt8.random(in: 0...255) }
        #expect(try Self.gunzipBytes(Array(buffer: try GzipEncoder.encode(ByteBuffer(bytes: random)))) == random)
    }
}
