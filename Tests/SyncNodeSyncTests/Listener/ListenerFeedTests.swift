import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

@Suite struct ListenerFeedTests {
    @Test func longpollWakesOnAWrite() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let collection = try #require(try h.node.database("db")?.defaultCollection())
            // `since` from before the write: the write may land before the request does.
            let since = try collection.lastSequence()
            // A poll that waited for its 2-minute timeout instead of the write would fail: the client gives up after 30 s.
            let poll = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=\(since)&timeout=120000&include_docs=true") }
            try await Task.sleep(for: .milliseconds(300))
            try collection.save(try MutableDocument(id: "late", data: ["v": 7]))
            let reply = try await poll.value
            let results = try #require(reply["results"]?.array)
            #expect(results.count == 1 && results[0]["id"]?.string == "late" && results[0]["doc"]?["v"]?.int == 7)
            // Nothing new: the long poll answers empty at its timeout.
            let empty = try await h.request(.GET, "/db/_changes?feed=longpoll&since=now&timeout=200")
            #expect(empty["results"]?.array?.isEmpty == true)
        }
    }

    /// A long poll with a heartbeat sends its head at once and an empty line each heartbeat while
    /// it waits, then its answer: the asker knows meanwhile that the node is there.
    @Test func longpollWithAHeartbeatSendsEmptyLinesWhileItWaits() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let collection = try #require(try h.node.database("db")?.defaultCollection())
            let since = try collection.lastSequence()
            let poll = Task { try await h.request(.GET, "/db/_changes?feed=longpoll&since=\(since)&timeout=60000&heartbeat=200") }
            try await Task.sleep(for: .milliseconds(900))
            try collection.save(MutableDocument(id: "late"))
            // (Under load the request may come after the write: then it answers without a heartbeat.)
            let reply = try await poll.value
            #expect(reply["results"]?.array?.compactMap { $0["id"]?.string } == ["late"], "\(reply.body.debugDescription)")
            // Nothing new: heartbeats, then the empty answer at the timeout. (At least one: a
            // whole suite on two cores once held this feed's task for most of a 3 s wait.)
            let empty = try await h.request(.GET, "/db/_changes?feed=longpoll&since=now&timeout=5000&heartbeat=100")
            #expect(empty.body.hasPrefix("\n") && empty["results"]?.array?.isEmpty == true, "\(empty.body.debugDescription)")
        }
    }

    @Test func continuousFeedStreamsHeartbeatsAndEndsAtTimeout() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let collection = try #require(try h.node.database("db")?.defaultCollection())
            try collection.save(MutableDocument(id: "first"))
            let feed = Task { try await h.request(.GET, "/db/_changes?feed=continuous&timeout=1200&heartbeat=200") }
            try await Task.sleep(for: .milliseconds(400))
            try collection.save(MutableDocument(id: "second"))
            let reply = try await feed.value
            let lines = reply.body.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
            let changes = lines.compactMap { try? DocumentValue(json: $0) }.compactMap { $0["id"]?.string }
            #expect(changes == ["first", "second"])
            // The body ends with a newline (one empty piece after it); heartbeats are empty lines before that.
            #expect(lines.dropLast().contains(""), "no heartbeat line")
            #expect(lines.last(where: { !$0.isEmpty })?.contains("last_seq") == true)

            let events = try await h.request(.GET, "/db/_changes?feed=eventsource&timeout=200")
            #expect(events.headers["content-type"] == "text/event-stream")
            #expect(events.body.contains("data: {") && events.body.contains("id: 2"))

            let filtered = try await h.request(.POST, "/db/_changes?filter=_doc_ids", body: #"{"doc_ids":["second"]}"#)
            #expect(filtered["results"]?.array?.compactMap { $0["id"]?.string } == ["second"])
            let limited = try await h.request(.GET, "/db/_changes?limit=1")
            #expect(limited["results"]?.array?.count == 1 && limited["last_seq"]?.int == 1 && limited["pending"]?.int == 1)
        }
    }

    @Test func statusCountsOpenConnectionsAndRequests() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let before = h.listener.status
            #expect(before.activeRequests == 0 && before.totalRequests >= 1)
            #expect(before.activeConnections >= 1, "the harness client's kept-alive connection is open")

            // A second client holds one more connection, busy with a feed for a second.
            var configuration = HTTPClient.Configuration()
            configuration.tlsConfiguration = try h.node.tlsIdentity().pinningClientConfiguration()
            let other = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
            var request = HTTPClientRequest(url: h.base + "/db/_changes?feed=continuous&timeout=1000")
            request.headers.add(name: "Authorization", value: ListenerHarness.authorization)
            let feed = Task { try await other.execute(request, timeout: .seconds(30)).body.collect(upTo: 1 << 20) }
            func status(until condition: (ListenerStatus) -> Bool) async -> ListenerStatus {
                let deadline = ContinuousClock.now.advanced(by: .seconds(10))
                while !condition(h.listener.status), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
                return h.listener.status
            }
            let during = await status { $0.activeRequests == 1 }
            #expect(during.activeRequests == 1)
            #expect(during.activeConnections == before.activeConnections + 1)
            _ = try await feed.value
            try await other.shutdown()
            let after = await status { $0.activeConnections == before.activeConnections }
            #expect(after.activeConnections == before.activeConnections, "the closed connection is still counted")
            #expect(after.activeRequests == 0)
            #expect(after.totalConnections == before.totalConnections + 1 && after.totalRequests == before.totalRequests + 1)
        }
    }

    /// Continuous feeds read in pages of 1000: every change arrives, also when
    /// a doc_ids filter leaves whole pages empty.
    @Test func continuousFeedPagesThroughALargeDatabase() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let collection = try #require(try h.node.database("db")?.defaultCollection())
            try collection.database.inBatch {
                for i in 0..<2500 { try collection.save(MutableDocument(id: "d\(i)")) }
            }
            let all = try await h.request(.GET, "/db/_changes?feed=continuous&timeout=300")
            let ids = all.body.split(separator: "\n").compactMap { try? DocumentValue(json: String($0)) }.compactMap { $0["id"]?.string }
            #expect(ids.count == 2500 && ids.first == "d0" && ids.last == "d2499")
            let filtered = try await h.request(.POST, "/db/_changes?feed=continuous&timeout=300&filter=_doc_ids", body: #"{"doc_ids":["d2400"]}"#)
            let lines = filtered.body.split(separator: "\n").compactMap { try? DocumentValue(json: String($0)) }
            #expect(lines.compactMap { $0["id"]?.string } == ["d2400"])
            #expect(lines.last?["last_seq"]?.int == 2500)
            // A limit above the page size ends the feed at the limit, not at the end of a page.
            let limited = try await h.request(.GET, "/db/_changes?feed=continuous&timeout=300&limit=1500")
            let rows = limited.body.split(separator: "\n").compactMap { try? DocumentValue(json: String($0)) }
            #expect(rows.compactMap { $0["id"]?.string }.count == 1500)
            #expect(rows.last?["last_seq"]?.int == 1500)
            let normal = try await h.request(.GET, "/db/_changes?limit=1500")
            #expect(normal["results"]?.array?.count == 1500 && normal["last_seq"]?.int == 1500 && normal["pending"]?.int == 1000)
        }
    }
}

/// The listener's TLS records, read below the TLS layer: a chunk of a
/// streamed answer must start a record with its data, never travel as a bare
/// chunk-size line (CouchDB's replicator hung 30 s on such a record).
@Suite struct ListenerTLSRecordTests {
    /// Keeps every byte the server sent, before decryption.
    final class RecordTap: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        var bytes: [UInt8] = []
        let done: EventLoopPromise<[UInt8]>
        init(done: EventLoopPromise<[UInt8]>) { self.done = done }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            bytes += Array(buffer: unwrapInboundIn(data))
            context.fireChannelRead(data)
        }
        func channelInactive(context: ChannelHandlerContext) {
            done.succeed(bytes)
            context.fireChannelInactive()
        }
    }

    @Test func chunkSizeLinesTravelWithTheirData() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let c = try #require(try h.node.database("db", create: true)?.defaultCollection())
            try c.database.inBatch {
                for i in 0..<3000 { try c.save(try MutableDocument(id: "doc-\(i)", data: ["text": String(repeating: "x", count: 40)])) }
            }
            let port = try #require(h.listener.port)
            let group = MultiThreadedEventLoopGroup.singleton
            let done = group.next().makePromise(of: [UInt8].self)
            let context = try NIOSSLContext(configuration: try h.node.tlsIdentity().pinningClientConfiguration())
            let channel = try await ClientBootstrap(group: group).channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHandler(RecordTap(done: done))
                    try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                }
            }.connect(host: "127.0.0.1", port: port).get()
            let request = "GET /db/_changes?feed=normal&style=all_docs&since=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                + "Authorization: \(ListenerHarness.authorization)\r\nConnection: close\r\n\r\n"
            try await channel.writeAndFlush(ByteBuffer(string: request)).get()
            let raw = try await done.futureResult.get()
            // TLS record headers are plain text: type, version, length. 23 is application data;
            // a record of under 25 bytes holds at most 7 bytes of plain text (16-byte tag, content type).
            var lengths: [Int] = []
            var i = 0
            while i + 5 <= raw.count {
                let length = Int(raw[i + 3]) << 8 | Int(raw[i + 4])
                if raw[i] == 23 { lengths.append(length) }
                i += 5 + length
            }
            let total = lengths.reduce(0, +)
            #expect(total > 150_000)  // several chunks of the feed
            // Only the last two may be that small: the final zero-size chunk, then TLS 1.3's encrypted close_notify.
            let tiny = lengths.dropLast(2).filter { $0 < 25 }
            #expect(tiny.isEmpty, "records of a bare size line or CRLF: \(tiny) of \(lengths)")
        }
    }
}

/// TLS 1.2 clients get AEAD suites only.
@Suite struct ListenerCipherTests {
    final class Reader: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        var received = 0
        let done: EventLoopPromise<Int>
        init(done: EventLoopPromise<Int>) { self.done = done }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { received += unwrapInboundIn(data).readableBytes }
        func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
        func channelInactive(context: ChannelHandlerContext) { done.succeed(received) }
    }

    /// Bytes of HTTP answer a TLS 1.2 client offering only `ciphers` gets (0: no handshake).
    static func answer(_ h: ListenerHarness, ciphers: String) async throws -> Int {
        var tls = try h.node.tlsIdentity().pinningClientConfiguration()
        tls.maximumTLSVersion = .tlsv12
        tls.cipherSuites = ciphers
        let context = try NIOSSLContext(configuration: tls)
        let group = MultiThreadedEventLoopGroup.singleton
        let done = group.next().makePromise(of: Int.self)
        let channel = try await ClientBootstrap(group: group).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                try channel.pipeline.syncOperations.addHandler(Reader(done: done))
            }
        }.connect(host: "127.0.0.1", port: h.listener.port ?? 0).get()
        let request = "GET /_session HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
        channel.writeAndFlush(ByteBuffer(string: request), promise: nil)
        return try await done.futureResult.get()
    }

    @Test func tls12OffersAEADSuitesOnly() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let aead = try await ListenerCipherTests.answer(h, ciphers: "ECDHE-ECDSA-AES128-GCM-SHA256")
            let cbc128 = try await ListenerCipherTests.answer(h, ciphers: "ECDHE-ECDSA-AES128-SHA")
            let cbc256 = try await ListenerCipherTests.answer(h, ciphers: "ECDHE-ECDSA-AES256-SHA")
            #expect(aead > 0)
            #expect(cbc128 == 0 && cbc256 == 0)
        }
    }
}

/// Connections that stall are closed after the idle timeout: before a TLS
/// ClientHello, in the middle of request headers or of a body, and idle
/// between requests. (The 20 s each may wait is a liveness bound, not speed.)
@Suite struct ListenerStallTests {
    final class Watcher: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        let closed: EventLoopPromise<Void>
        init(closed: EventLoopPromise<Void>) { self.closed = closed }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) {}
        func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
        func channelInactive(context: ChannelHandlerContext) { closed.succeed(()) }
    }

    /// Connects (over TLS when `tls`), writes `send`, and tells whether the listener closes the connection within 20 s.
    static func closes(_ h: ListenerHarness, tls: Bool, send: String) async throws -> Bool {
        let group = MultiThreadedEventLoopGroup.singleton
        let loop = group.next()
        let closed = loop.makePromise(of: Void.self)
        let context = tls ? try NIOSSLContext(configuration: try h.node.tlsIdentity().pinningClientConfiguration()) : nil
        let channel = try await ClientBootstrap(group: loop).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                if let context { try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil)) }
                try channel.pipeline.syncOperations.addHandler(Watcher(closed: closed))
            }
        }.connect(host: "127.0.0.1", port: h.listener.port ?? 0).get()
        // Under load the listener may close first (the handshake outlasted the timeout): that is the outcome sought too.
        if !send.isEmpty { try? await channel.writeAndFlush(ByteBuffer(string: send)).get() }
        let gaveUp = loop.scheduleTask(in: .seconds(20)) { closed.fail(ChannelError.connectTimeout(.seconds(20))) }
        defer { gaveUp.cancel() }
        do {
            try await closed.futureResult.get()
            return true
        } catch {
            try? await channel.close()
            return false
        }
    }

    @Test func stalledConnectionsAreClosed() async throws {
        let h = try await ListenerHarness(idleTimeout: .seconds(2))
        try await withCleanup({ await h.shutdown() }) {
            let auth = "Authorization: \(ListenerHarness.authorization)\r\n"
            let noClientHello = try await ListenerStallTests.closes(h, tls: false, send: "")
            let slowHeaders = try await ListenerStallTests.closes(h, tls: true, send: "GET / HTTP/1.1\r\nHost: x\r\n")
            let stalledBody = try await ListenerStallTests.closes(h, tls: true, send: "PUT /db HTTP/1.1\r\nHost: x\r\n\(auth)Content-Length: 100\r\n\r\n{\"a\":")
            let idleKeepAlive = try await ListenerStallTests.closes(h, tls: true, send: "GET /_up HTTP/1.1\r\nHost: x\r\n\(auth)\r\n")
            #expect(noClientHello && slowHeaders && stalledBody && idleKeepAlive)
        }
    }
}

/// Beyond the per-address limit a connection's request gets 503 and the connection closes.
@Suite struct ListenerConnectionLimitTests {
    final class Collector: ChannelInboundHandler, @unchecked Sendable {
        typealias InboundIn = ByteBuffer
        var text = ""
        let done: EventLoopPromise<String>
        init(done: EventLoopPromise<String>) { self.done = done }
        func channelRead(context: ChannelHandlerContext, data: NIOAny) { text += String(buffer: unwrapInboundIn(data)) }
        func errorCaught(context: ChannelHandlerContext, error: Error) { context.close(promise: nil) }
        func channelInactive(context: ChannelHandlerContext) { done.succeed(text) }
    }

    /// Sends a GET with `Connection: close` over TLS and returns everything answered.
    static func exchange(_ h: ListenerHarness, _ path: String) async throws -> String {
        try await exchange(h, raw: "GET \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: \(ListenerHarness.authorization)\r\nConnection: close\r\n\r\n")
    }

    /// Sends `raw` over TLS and returns everything answered until the listener closes.
    static func exchange(_ h: ListenerHarness, raw request: String) async throws -> String {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let done = loop.makePromise(of: String.self)
        let context = try NIOSSLContext(configuration: try h.node.tlsIdentity().pinningClientConfiguration())
        let channel = try await ClientBootstrap(group: loop).channelInitializer { channel in
            channel.eventLoop.makeCompletedFuture {
                try channel.pipeline.syncOperations.addHandler(try NIOSSLClientHandler(context: context, serverHostname: nil))
                try channel.pipeline.syncOperations.addHandler(Collector(done: done))
            }
        }.connect(host: "127.0.0.1", port: h.listener.port ?? 0).get()
        try await channel.writeAndFlush(ByteBuffer(string: request)).get()
        let gaveUp = loop.scheduleTask(in: .seconds(20)) { done.fail(ChannelError.connectTimeout(.seconds(20))) }
        defer { gaveUp.cancel() }
        return try await done.futureResult.get()
    }

    @Test func connectionsBeyondThePerAddressLimitGet503() async throws {
        let h = try await ListenerHarness(maxConnectionsPerAddress: 2)
        try await withCleanup({ await h.shutdown() }) {
            // Two connections that send nothing take this address's two places.
            let idle = try await (0..<2).asyncMap { _ in
                try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton).connect(host: "127.0.0.1", port: h.listener.port ?? 0).get()
            }
            let deadline = ContinuousClock.now.advanced(by: .seconds(20))  // liveness bounds, not timings
            while h.listener.status.activeConnections < 2, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            let refused = try await ListenerConnectionLimitTests.exchange(h, "/_up")
            #expect(refused.hasPrefix("HTTP/1.1 503"), "\(refused.prefix(200))")
            #expect(refused.contains(#""error":"service_unavailable""#))
            #expect(h.listener.status.refusedConnections == 1)
            for channel in idle { try await channel.close() }
            while h.listener.status.activeConnections > 0, ContinuousClock.now < deadline.advanced(by: .seconds(20)) {
                try await Task.sleep(for: .milliseconds(10))
            }
            let admitted = try await ListenerConnectionLimitTests.exchange(h, "/_up")
            #expect(admitted.hasPrefix("HTTP/1.1 200"), "\(admitted.prefix(200))")
        }
    }
}

@Suite struct ListenerFramingTests {
    /// An answer whose framing the client can read: a JSON error, its length, and a close.
    static func expectClosingJSONError(_ reply: String, status: Int, error: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(reply.hasPrefix("HTTP/1.1 \(status)"), "\(reply.prefix(300))", sourceLocation: sourceLocation)
        #expect(reply.contains(#""error":"\#(error)""#) && reply.contains(#""reason":""#), "\(reply.prefix(300))", sourceLocation: sourceLocation)
        let body = reply.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        #expect(reply.lowercased().contains("content-length: \(body.utf8.count)\r\n"), "\(reply.prefix(300))", sourceLocation: sourceLocation)
        #expect(reply.lowercased().contains("connection: close"), "\(reply.prefix(300))", sourceLocation: sourceLocation)
    }

    /// NIO strips the body and length of any answer to CONNECT and would then keep the connection.
    @Test func connectGets405WithABodyAndACLose() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let reply = try await ListenerConnectionLimitTests.exchange(
                h, raw: "CONNECT /_uuids HTTP/1.1\r\nHost: x\r\nAuthorization: \(ListenerHarness.authorization)\r\n\r\n")
            Self.expectClosingJSONError(reply, status: 405, error: "method_not_allowed")
        }
    }

    /// Bytes the HTTP parser rejects get a JSON 400, not NIO's empty one.
    @Test(arguments: ["GE T / HTTP/1.1\r\nHost: x\r\n\r\n", "GET / HTTP/1.1\r\nBad Name: v\r\n\r\n",
                      "PUT /db/x HTTP/1.1\r\nContent-Length: -1\r\n\r\n{}", "GARBAGE\r\n\r\n"])
    func unparsableRequestsGetAJSON400(_ raw: String) async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            let reply = try await ListenerConnectionLimitTests.exchange(h, raw: raw)
            Self.expectClosingJSONError(reply, status: 400, error: "bad_request")
        }
    }

    /// A bad request after one still being answered waits for that answer, then gets its 400.
    @Test func anUnreadableRequestIsAnsweredAfterTheOneBeforeIt() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let slow = "GET /db/_changes?feed=longpoll&since=now&timeout=300 HTTP/1.1\r\nHost: x\r\nAuthorization: \(ListenerHarness.authorization)\r\n\r\n"
            let reply = try await ListenerConnectionLimitTests.exchange(h, raw: slow + "GARBAGE\r\n\r\n")
            #expect(reply.hasPrefix("HTTP/1.1 200"), "\(reply.prefix(300))")
            let second = reply.range(of: "HTTP/1.1 400").map { String(reply[$0.lowerBound...]) } ?? ""
            Self.expectClosingJSONError(second, status: 400, error: "bad_request")
        }
    }

    /// `/db/../x` would otherwise write document `..` with attachment `x`.
    @Test func dotSegmentsAreRefused() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            for path in ["/db/../x", "/db/./x", "/db/.."] {
                let reply = try await ListenerConnectionLimitTests.exchange(
                    h, raw: "PUT \(path) HTTP/1.1\r\nHost: x\r\nAuthorization: \(ListenerHarness.authorization)\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}")
                #expect(reply.hasPrefix("HTTP/1.1 400") && reply.contains("percent-encode"), "\(path): \(reply.prefix(300))")
            }
            #expect(try await h.request(.GET, "/db")["doc_count"]?.int == 0)
            // Spelled percent-encoded, `..` is an ordinary ID.
            #expect(try await h.request(.PUT, "/db/%2E%2E", body: "{}").status == 201)
        }
    }


    /// A body in a transfer coding the listener does not decode is refused, not read as plain chunks.
    @Test func transferCodingsOtherThanChunkedAre501() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            _ = try await h.request(.PUT, "/db")
            let head = "PUT /db/g HTTP/1.1\r\nHost: x\r\nAuthorization: \(ListenerHarness.authorization)\r\nContent-Type: application/json\r\n"
            let gzip = try await ListenerConnectionLimitTests.exchange(
                h, raw: head + "Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            #expect(gzip.hasPrefix("HTTP/1.1 501") && gzip.contains(#""error":"not_implemented""#), "\(gzip.prefix(200))")
            #expect(try await h.request(.GET, "/db/g").status == 404)
            let chunked = try await ListenerConnectionLimitTests.exchange(
                h, raw: head + "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n2\r\n{}\r\n0\r\n\r\n")
            #expect(chunked.hasPrefix("HTTP/1.1 201"), "\(chunked.prefix(200))")
        }
    }
}

extension Sequence {
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var out: [T] = []
        for element in self { out.append(try await transform(element)) }
        return out
    }
}
