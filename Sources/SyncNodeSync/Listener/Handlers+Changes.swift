import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import ServiceLifecycle
import Synchronization
import SyncNodeStore

extension Handlers {
    func changes(_ request: Request, collection: DocumentCollection) async throws -> Response {
        var parsed = try await parseChanges(request, collection: collection)
        let signal = ChangeSignal()
        // Changes pulled from a peer the asker pulls from live wake its long poll only a
        // moment later: it gets them from there, so a mesh does not make n² useless passes in
        // the milliseconds a write crosses, and the passes it makes cover several writes.
        let covered = parsed.feed == .longpoll ? parsed.liveSources : []
        let relayed = RelayedRevisions()
        if parsed.revisions, !covered.isEmpty { parsed.relayed = relayed }
        let spec = parsed
        let listening = collection.addChangeListener { change in
            if !covered.isEmpty { relayed.add(change.documents, pulledFrom: covered) }
            Self.wake(signal, for: change.documents, covered: covered)
        }
        // Deleted while it waits: the feed wakes, and ends (see ``LongPollWait``).
        let closing = collection.database.addCloseListener { signal.fire() }
        let token = FeedListeners([listening, closing])
        // A waiting feed outlives its request's sign-in check: it wakes when access changes, and
        // ends when its asker may read this keyspace no more.
        let revocation = FeedRevocation(handlers: self, current: Authentication.ofRequest?.current, keyspace: Keyspace(collection), signal: signal)
        switch spec.feed {
        case .normal, .longpoll:
            if spec.feed == .longpoll, let heartbeat = spec.heartbeat {
                // The head now, a newline each heartbeat while it waits (so the asker knows this
                // node is there without a request of its own), then the answer.
                let answer = ResponseBody { [self] writer in
                    defer {
                        token.remove()
                        revocation.end()
                    }
                    var wait = LongPollWait(handlers: self, collection: collection, spec: spec, signal: signal, revocation: revocation)
                    while try await wait.next(heartbeat: .milliseconds(heartbeat)) {
                        try await writer.write(ByteBuffer(string: "\n"))
                    }
                    let descending = spec.descending ? try page(collection, spec, since: spec.since, pageSize: nil, sent: 0) : nil
                    try await streamedFeed(collection, spec, descending: descending.map { ($0.entries, $0.last) }).body.write(writer)
                }
                return Response(status: .ok, headers: [.contentType: HTTP.json], body: answer)
            }
            defer {
                token.remove()
                revocation.end()
            }
            if spec.feed == .longpoll {
                var wait = LongPollWait(handlers: self, collection: collection, spec: spec, signal: signal, revocation: revocation)
                _ = try await wait.next(heartbeat: nil)
            }
            // Descending needs the whole range first; ascending feeds are read page by page.
            let descending = spec.descending ? try page(collection, spec, since: spec.since, pageSize: nil, sent: 0) : nil
            return streamedFeed(collection, spec, descending: descending.map { ($0.entries, $0.last) })
        case .continuous, .eventsource:
            let contentType = spec.feed == .eventsource ? "text/event-stream" : HTTP.json
            let budget = answerBudget
            let body = ResponseBody { [self] writer in
                defer {
                    token.remove()
                    revocation.end()
                }
                var stream = AnswerStream(budget: budget)
                var since = spec.since
                var sent = 0
                var idleSince = ContinuousClock.now
                var lastWrite = ContinuousClock.now
                while !Task.isShuttingDownGracefully {
                    // Access withdrawn: the feed ends here (its client's next request is refused).
                    if revocation.isRevoked() {
                        logger.notice("a feed ends: its asker's access was withdrawn", metadata: ["keyspace": "\(Keyspace(collection).name)"])
                        try await writer.finish(nil)
                        return
                    }
                    // Deleted: the feed ends as after its timeout (its client asks again, and is told).
                    if collection.database.isClosed { break }
                    // In pages, so a feed from the start of a large database does not read it all at once.
                    let (entries, last, more) = try page(collection, spec, since: since, pageSize: 1000, sent: sent)
                    var next = 0
                    while next < entries.count {
                        let run = try contents(of: entries, from: next, collection, spec)
                        for (offset, content) in run.enumerated() {
                            let entry = entries[next + offset]
                            if spec.feed == .eventsource { stream.json.writeRaw("data: ") }
                            try await writeChange(entry, content, collection: collection, spec, stream: &stream, to: &writer)
                            stream.json.writeRaw(spec.feed == .eventsource ? "\nid: \(entry.sequence)\n\n" : "\n")
                            try await stream.flush(&writer, all: true)
                            if spec.includeDocs && !entry.deleted { metrics.documentsRead(1) }
                            sent += 1
                            lastWrite = .now
                        }
                        next += run.count
                    }
                    since = last
                    if let limit = spec.limit, sent >= limit { break }
                    if !entries.isEmpty { idleSince = .now }
                    if !entries.isEmpty || more { continue }
                    // The feed ends after `timeout` without changes; heartbeats fill the wait.
                    // Waits last at most a second, so a graceful stop is noticed quickly.
                    var wait = Duration.seconds(1)
                    if let heartbeat = spec.heartbeat {
                        wait = min(wait, max(.zero, .milliseconds(heartbeat) - lastWrite.duration(to: .now)))
                    }
                    if let timeout = spec.timeout {
                        let remaining = Duration.milliseconds(timeout) - idleSince.duration(to: .now)
                        if remaining <= .zero { break }
                        wait = min(wait, remaining)
                    }
                    let changed = await signal.wait(timeout: wait)
                    if !changed, let heartbeat = spec.heartbeat, lastWrite.duration(to: .now) >= .milliseconds(heartbeat) {
                        // Each heartbeat in a chunk of its own: some clients parse chunks, not lines.
                        try await writer.write(ByteBuffer(string: "\n"))
                        lastWrite = .now
                    }
                }
                if spec.feed == .continuous {
                    try await writer.write(ByteBuffer(string: #"{"last_seq":\#(since),"pending":0}"# + "\n"))
                }
                try await writer.finish(nil)
            }
            return Response(status: .ok, headers: [.contentType: contentType], body: body)
        }
    }

    /// A normal (or answered long-poll) feed, spliced as text and streamed (see ``AnswerStream``):
    /// ascending feeds are read page by page while earlier pages are being sent; a descending one
    /// comes with its entries already read (not their bodies).
    private func streamedFeed(
        _ collection: DocumentCollection, _ spec: ChangesRequest, descending: (entries: [ChangeEntry], last: Int64)?
    ) -> Response {
        AnswerStream.response(budget: answerBudget) { [self] stream, writer in
            let pageSize = 1000
            let end = try collection.lastSequence()
            stream.json.writeRaw(#"{"results":["#)
            var since = spec.since
            var lastSent = spec.since
            var sent = 0
            var docsSent = 0
            // Counted however the feed ends (the client may leave half-way).
            defer { metrics.documentsRead(docsSent) }
            var limitReached = false
            @Sendable func page(after since: Int64) throws -> (entries: [ChangeEntry], through: Int64) {
                try read(collection, spec, since: since, limit: pageSize)
            }
            var (batch, through) = try descending.map { ($0.entries, $0.last) } ?? page(after: since)
            paging: while true {
                let more = descending == nil && batch.count == pageSize
                let nextSince = descending == nil ? through : since
                // The next page is read while this one is written out, when it will surely be needed.
                let needed = more && spec.limit.map { sent + batch.count < $0 } ?? more
                async let prefetched = needed ? page(after: nextSince) : nil
                let wanted = spec.docIDs.map { ids in batch.filter { ids.contains($0.id) } } ?? batch
                var next = 0
                while next < wanted.count {
                    let run = try contents(of: wanted, from: next, collection, spec)
                    for (offset, content) in run.enumerated() {
                        let entry = wanted[next + offset]
                        if let limit = spec.limit, sent >= limit {
                            limitReached = true
                            break paging
                        }
                        if sent > 0 { stream.json.writeRaw(",") }
                        try await writeChange(entry, content, collection: collection, spec, stream: &stream, to: &writer)
                        sent += 1
                        if spec.includeDocs && !entry.deleted { docsSent += 1 }
                        lastSent = entry.sequence
                    }
                    next += run.count
                }
                since = nextSince
                guard more else { break }
                (batch, through) = try await prefetched ?? page(after: nextSince)
            }
            let lastSeq = descending?.last ?? (limitReached ? lastSent : max(since, spec.feed == .normal ? end : since))
            let pending = limitReached ? try collection.changeCount(since: lastSeq) : 0
            stream.json.writeRaw(#"],"last_seq":"#)
            stream.json.writeInteger(lastSeq)
            stream.json.writeRaw(#","pending":"#)
            stream.json.writeInteger(Int64(pending))
            if spec.digest {
                stream.json.writeRaw(#","digest":"#)
                stream.json.writeString(try collection.digest().root)
            }
            stream.json.writeRaw("}")
        }
    }

    /// What a `_changes` row carries besides its changes: the winner's body (`include_docs`) and
    /// the revision's JSON body with its history (`revisions=true`, when the row qualifies).
    private struct RowContent {
        var body: RevisionBody?
        var revision: (body: String, history: [String])?
    }

    /// The content of a run of `entries` from `start`, read in one snapshot (see
    /// ``AnswerStream/run(count:from:in:read:)``); large bodies only measured.
    private func contents(
        of entries: [ChangeEntry], from start: Int, _ collection: DocumentCollection, _ spec: ChangesRequest
    ) throws -> [RowContent] {
        guard spec.includeDocs || spec.revisions else { return Array(repeating: RowContent(), count: entries.count - start) }
        return try AnswerStream.run(count: entries.count, from: start, in: collection) { index in
            let entry = entries[index]
            var content = RowContent()
            var bytes = 0
            if spec.includeDocs { (content.body, bytes) = try AnswerStream.body(of: entry.id, rev: entry.rev, in: collection) }
            if spec.revisions, let revision = try carriedRevision(entry, collection, spec) {
                content.revision = revision
                bytes += revision.body.utf8.count
            }
            return (content, bytes)
        }
    }

    /// The revision a `revisions=true` row carries: that of a document with one leaf, a small body
    /// holding no blobs, not pulled from one of the asker's live sources while it waited.
    private func carriedRevision(
        _ entry: ChangeEntry, _ collection: DocumentCollection, _ spec: ChangesRequest
    ) throws -> (body: String, history: [String])? {
        guard entry.leafRevs == [entry.rev], spec.relayed?.contains(id: entry.id, rev: entry.rev) != true,
              let revision = try collection.streamedRevision(id: entry.id, rev: entry.rev, readingAtMost: Self.inlineRevisionLimit),
              case .text(let text)? = revision.body, !WireDocument.hasBlobs(text) else { return nil }
        return (text, revision.history)
    }

    /// The changes after `since` that the request wants, `sent` having been sent already: at
    /// most `pageSize` read (nil: all), the sequence to go on from, and whether the read was
    /// cut at `pageSize` (more may follow).
    private func page(
        _ c: DocumentCollection, _ spec: ChangesRequest, since: Int64, pageSize: Int?, sent: Int
    ) throws -> (entries: [ChangeEntry], last: Int64, more: Bool) {
        let remaining = spec.limit.map { max(0, $0 - sent) }
        // Descending: the newest first, so the limit applies after reversing.
        let wanted = spec.docIDs == nil && !spec.descending ? remaining : nil
        let readLimit = [wanted, pageSize].compactMap { $0 }.min()
        let found = try read(c, spec, since: since, limit: readLimit)
        var entries = found.entries
        let more = pageSize.map { entries.count == $0 } ?? false
        let current = spec.feed == .normal ? try c.lastSequence() : since
        // A selector's read may pass over changes that matched nothing: it covered `through`,
        // and nothing after (a later `lastSequence()` may name changes it never looked at).
        let last = spec.selector == nil ? (entries.last?.sequence ?? max(since, current)) : found.through
        if let ids = spec.docIDs { entries = entries.filter { ids.contains($0.id) } }
        if spec.descending { entries.reverse() }
        if let remaining, entries.count > remaining { entries = Array(entries.prefix(remaining)) }
        let lastSent = spec.limit != nil && !spec.descending ? (entries.last?.sequence ?? last) : last
        return (entries, lastSent, more)
    }

    /// The changes after `since` the request's selector passes (all of them without one), at most
    /// `limit`, and the sequence the read covered.
    func read(
        _ c: DocumentCollection, _ spec: ChangesRequest, since: Int64, limit: Int?
    ) throws -> (entries: [ChangeEntry], through: Int64) {
        if let selector = spec.selector { return try c.changes(since: since, limit: limit, allLeaves: spec.allLeaves, matching: selector) }
        let entries = try c.changes(since: since, limit: limit, allLeaves: spec.allLeaves)
        return (entries, entries.last?.sequence ?? since)
    }

    /// The largest body a `revisions=true` row carries (larger ones are left to `_bulk_get`).
    static let inlineRevisionLimit = 16 << 10

    /// One `_changes` row with its `content`.
    private func writeChange(
        _ entry: ChangeEntry, _ content: RowContent, collection: DocumentCollection, _ spec: ChangesRequest,
        stream: inout AnswerStream, to writer: inout any ResponseBodyWriter
    ) async throws {
        stream.json.writeRaw(#"{"seq":"#)
        stream.json.writeInteger(entry.sequence)
        stream.json.writeRaw(#","id":"#)
        stream.json.writeString(entry.id)
        stream.json.writeRaw(#","changes":["#)
        for (i, rev) in entry.leafRevs.enumerated() {
            stream.json.writeRaw(i == 0 ? #"{"rev":"# : #",{"rev":"#)
            stream.json.writeString(rev)
            stream.json.writeRaw("}")
        }
        stream.json.writeRaw("]")
        if entry.deleted { stream.json.writeRaw(#","deleted":true"#) }
        if let revision = content.revision {
            stream.json.writeRaw(#","revision":"#)
            stream.json.writeRaw(try WireDocument.encode(
                id: entry.id, rev: entry.rev, deleted: entry.deleted, body: revision.body, revisions: revision.history, collection: collection))
        }
        if spec.includeDocs {
            stream.json.writeRaw(#","doc":"#)
            let conflicts = spec.conflicts ? try collection.conflictingRevisions(id: entry.id) : nil
            if let body = content.body {
                try await stream.writeDocument(
                    id: entry.id, rev: entry.rev, deleted: entry.deleted, body: body, simple: conflicts?.isEmpty ?? true,
                    collection: collection, to: &writer
                ) { text in
                    try WireDocument.encode(
                        id: entry.id, rev: entry.rev, deleted: entry.deleted, body: text, conflicts: conflicts, collection: collection)
                }
            } else {
                // Replaced since the page was read, and gone.
                stream.json.writeRaw("null")
            }
        }
        stream.json.writeRaw("}")
    }
}

extension Handlers {
    /// How much later a change pulled from one of a long poll's `live_sources` wakes it: past
    /// the time a write takes to reach every node of a twenty-node mesh on 2 cores (p95
    /// 0.29-0.58 s; with 250 ms the relays' passes came while it crossed, and it took 0.74-1.03 s),
    /// so that a woken pass covers the writes of a second; short enough that the asker's
    /// checkpoint here, and so its count of changes pending from this node, lags at most a second.
    static let coveredWakeDelay = Duration.seconds(1)

    /// Wakes a feed's `signal` for a commit's `documents`: `delay` later when this node's
    /// replicator pulled every one of them from one of `covered` (a long poll's `live_sources`),
    /// else at once.
    static func wake(_ signal: ChangeSignal, for documents: [ChangedDocument], covered: Set<String>, delay: Duration = coveredWakeDelay) {
        let pulledFromCovered = !covered.isEmpty && documents.allSatisfy { document in
            guard case .replication(let peer) = document.origin else { return false }
            return covered.contains(peer)
        }
        if pulledFromCovered { signal.fire(after: delay) } else { signal.fire() }
    }
}

/// A feed's store listeners: removed when the feed ends, or when it is dropped without having
/// run (its client left first).
final class FeedListeners: Sendable {
    private let tokens: [ListenerToken]

    init(_ tokens: [ListenerToken]) { self.tokens = tokens }

    func remove() { for token in tokens { token.remove() } }

    deinit { remove() }
}

/// Ends a waiting feed when its asker's access is withdrawn: the ``AccessWatch`` wakes it, and
/// it checks its asker again only then.
final class FeedRevocation: Sendable {
    private let handlers: Handlers
    private let current: (@Sendable () -> Principal?)?
    private let keyspace: Keyspace
    private let token: Int
    private let checked: Mutex<Int>

    init(handlers: Handlers, current: (@Sendable () -> Principal?)?, keyspace: Keyspace, signal: ChangeSignal) {
        self.handlers = handlers
        self.current = current
        self.keyspace = keyspace
        checked = Mutex(handlers.accessWatch.generation)
        token = handlers.accessWatch.onChange { signal.fire() }
    }

    /// True once the asker may no longer read the keyspace (checked only after a change).
    func isRevoked() -> Bool {
        let now = handlers.accessWatch.generation
        guard checked.withLock({ c in defer { c = now }; return c != now }) else { return false }
        return !handlers.stillAllowed(current, keyspace: keyspace)
    }

    /// Stops listening for changes.
    func end() { handlers.accessWatch.remove(token) }

    // A body that never ran (the client left first) must not leave its listener behind.
    deinit { end() }
}
