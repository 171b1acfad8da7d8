import Foundation
import NIOCore
import NIOEmbedded
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// What a big answer holds (its turn at the memory budget, a read of the store) is let go when
/// its client stops reading or leaves, and what encoding a document builds is counted.
@Suite struct AnswerHoldTests {
    /// A client that asks for a big answer and then reads nothing is closed after the idle
    /// timeout, and the budget it held serves the next reader.
    @Test func aClientThatStopsReadingIsClosedAndFreesTheBudget() async throws {
        // 8 MB of answer: more than the connection's buffers hold, so that the writer must wait.
        let h = try await ListenerHarness(tls: false, idleTimeout: .seconds(2), answerMemoryBudget: 1 << 20)
        let c = try #require(try h.node.database("db", create: true)).defaultCollection()
        for i in 0..<8 { try c.save(try MutableDocument(id: "big\(i)", data: ["text": StreamedAnswerTests.text(i, size: 1_000_000)])) }
        try await withCleanup({ await h.shutdown() }) {
            let port = try #require(h.listener.port)
            let stalled = try RawClient(port: port, receiveBuffer: 4096)
            defer { stalled.close() }
            try stalled.send("GET /db/_all_docs?include_docs=true HTTP/1.1\r\nHost: x\r\nAuthorization: \(ListenerHarness.authorization)\r\n\r\n")
            // The answer has begun (its first row is a large body, waiting for or holding the budget).
            let head = try stalled.receive(atMost: 64)
            #expect(head.starts(with: Array("HTTP/1.1 200".utf8)))
            try await Task.sleep(for: .milliseconds(500))

            // Each large body takes the whole budget (1 MiB): this waits until the stalled one lets go.
            let all = try await h.request(.GET, "/db/_all_docs?include_docs=true")
            let rows = try #require(all["rows"]?.array)
            #expect(rows.count == 8)
            for (i, row) in rows.enumerated() { #expect(row["doc"]?["text"]?.string == StreamedAnswerTests.text(i, size: 1_000_000)) }

            // The stalled connection was closed, its answer cut short.
            let (received, closed) = stalled.drain(waiting: .seconds(10))
            #expect(closed, "the server still holds the stalled connection")
            #expect(received < 8_000_000)
        }
    }

    /// A `_query` whose client left stops reading: nobody waits for its rows.
    @Test func aQueryWhoseClientLeftStops() async throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-spill-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let database = try Database(name: "db", config: DatabaseConfiguration(directory: dir))
        defer { try? database.close() }
        let c = try database.defaultCollection()
        for i in 0..<10 { try c.save(MutableDocument(id: "d\(i)", data: ["n": i])) }
        let departure = ClientDeparture()
        // The async testing channel, not EmbeddedChannel: an async test resumes on other threads.
        let channel = await NIOAsyncTestingChannel(handler: departure)
        let query = try database.createQuery("SELECT * FROM _")
        #expect(try await QuerySpill.run(query, in: database.path, usage: QuerySpill.Usage(), departure: departure).size > 0)
        try await channel.testingEventLoop.executeInContext { channel.pipeline.fireChannelInactive() }
        do {
            _ = try await QuerySpill.run(query, in: database.path, usage: QuerySpill.Usage(), departure: departure)
            Issue.record("the query went on after its client left")
        } catch let error as CouchError {
            #expect(error.status == 499)
        }
    }

    /// A reader whose client leaves while it waits for the budget stops waiting.
    @Test func aWaitingReaderWhoseClientLeavesStopsWaiting() async throws {
        let budget = AnswerBudget(capacity: 100)
        let held = try await budget.reserve(100)
        let departure = ClientDeparture()
        // The async testing channel, not EmbeddedChannel: an async test resumes on other threads.
        let channel = await NIOAsyncTestingChannel(handler: departure)
        let waiter = Task { try await budget.reserve(50, departure: departure) }
        while budget.waiting < 1 { await Task.yield() }
        try await channel.testingEventLoop.executeInContext { channel.pipeline.fireChannelInactive() }
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(budget.waiting == 0)
        budget.release(held)
        #expect(budget.available == 100)
        // Gone before it asks: no turn at all.
        await #expect(throws: CancellationError.self) { try await budget.reserve(10, departure: departure) }
        #expect(budget.available == 100)
        _ = try? await channel.finish()
    }

    /// Attachments inlined as base64 (`attachments=true`) are counted against the budget: one
    /// larger than the whole budget still goes out, whole.
    @Test func inlineAttachmentsLargerThanTheBudgetGoOutWhole() async throws {
        let h = try await ListenerHarness(answerMemoryBudget: 1 << 20)
        try await withCleanup({ await h.shutdown() }) {
            #expect(try await h.request(.PUT, "/db").status == 201)
            let content = (0..<(1_500_000)).map { UInt8(truncatingIfNeeded: $0 &* 7) }
            let put = try await h.request(.PUT, "/db/doc/data.bin", bytes: content, headers: [("Content-Type", "application/octet-stream")])
            #expect(put.status == 201)
            let single = try await h.request(.GET, "/db/doc?attachments=true")
            let data = single["_attachments"]?["data.bin"]?["data"]?.string
            #expect(data.flatMap { Data(base64Encoded: $0) }.map(Array.init) == content)
            let bulk = try await h.request(.POST, "/db/_bulk_get?attachments=true", body: #"{"docs":[{"id":"doc"},{"id":"doc"}]}"#)
            let results = try #require(bulk["results"]?.array)
            #expect(results.count == 2)
            for result in results {
                let inline = result["docs"]?.array?.first?["ok"]?["_attachments"]?["data.bin"]?["data"]?.string
                #expect(inline.flatMap { Data(base64Encoded: $0) }.map(Array.init) == content)
            }
        }
    }
}

/// A plain TCP client for what HTTP clients will not do: stop reading.
private final class RawClient {
    let fd: Int32

    init(port: Int, receiveBuffer: Int32) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var size = receiveBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = UInt16(port).bigEndian
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        try #require(connected == 0)
    }

    func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        try #require(bytes.withUnsafeBytes { Foundation.send(fd, $0.baseAddress, $0.count, 0) } == bytes.count)
    }

    func receive(atMost count: Int) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let got = recv(fd, &buffer, count, 0)
        try #require(got > 0)
        return Array(buffer.prefix(got))
    }

    /// Reads until the server closes (true) or nothing came for `waiting`; the bytes read.
    func drain(waiting: Duration) -> (bytes: Int, closed: Bool) {
        var timeout = timeval(tv_sec: Int(waiting.components.seconds), tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        var total = 0
        var buffer = [UInt8](repeating: 0, count: 65536)
        while true {
            let got = recv(fd, &buffer, buffer.count, 0)
            if got == 0 { return (total, true) }
            if got < 0 { return (total, errno == ECONNRESET) }
            total += got
        }
    }

    func close() { _ = Foundation.close(fd) }
}
