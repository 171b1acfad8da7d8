import CoreMetrics
import Foundation
import Prometheus
import Synchronization
import SyncNodeStore

/// The node's metrics in Prometheus's text format, for `GET /_node/_local/_prometheus`.
///
/// Recorded through swift-metrics into a registry of the listener's own (nothing is
/// bootstrapped process-wide, so an app embedding a node keeps its own metrics backend).
/// Counters of requests and latencies move as requests are answered; documents written are
/// counted by each open collection's change events; sizes, lag, connections, peers and body
/// bytes are read when scraped.
final class NodeMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory
    private struct State {
        var requestCounters: [String: CoreMetrics.Counter] = [:]
        /// Collections whose writes are counted, by database and full name.
        var watched: [String: ListenerToken] = [:]
        /// Replication totals at the last scrape (counters move by the difference).
        var replicated = ReplicationResult()
        /// Body bytes sent and received at the last scrape.
        var bodyBytes = (sent: 0, received: 0)
        var gauges: [String: CoreMetrics.Gauge] = [:]
    }
    private let state = Mutex(State())
    private let scraping = NSLock()
    private let latency: CoreMetrics.Timer
    private let documentsReadCounter: CoreMetrics.Counter

    init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets["syncnode_http_request_duration_seconds"] = [
            .milliseconds(1), .milliseconds(5), .milliseconds(10), .milliseconds(50), .milliseconds(100),
            .milliseconds(500), .seconds(1), .seconds(5), .seconds(30),
        ]
        self.factory = factory
        latency = CoreMetrics.Timer(label: "syncnode_http_request_duration_seconds", dimensions: [], factory: factory)
        documentsReadCounter = CoreMetrics.Counter(label: "syncnode_documents_read_total", factory: factory)
    }

    /// One answered request: its method, status and the time to its response head.
    func request(method: String, status: Int, duration: Duration) {
        // Methods are the client's to invent: only the usual ones get a series (and a key) of their own.
        let known = Self.methods.contains(method) ? method : "other"
        let key = "\(known) \(status)"
        let counter = state.withLock { s in
            if let counter = s.requestCounters[key] { return counter }
            let counter = CoreMetrics.Counter(label: "syncnode_http_requests_total", dimensions: [("method", known), ("status", "\(status)")], factory: factory)
            s.requestCounters[key] = counter
            return counter
        }
        counter.increment()
        latency.recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
    }

    private static let methods: Set<String> = ["GET", "HEAD", "POST", "PUT", "DELETE", "COPY", "OPTIONS"]

    /// Documents sent to clients (a document GET, `_bulk_get`, and the bodies of `_all_docs` and
    /// `_changes` with `include_docs`).
    func documentsRead(_ count: Int) {
        guard count > 0 else { return }
        documentsReadCounter.increment(by: count)
    }

    /// The text to serve: the gauges read now, then every series.
    func scrape(directory: NodeDirectory, served: (String) -> Bool, tasks: ReplicationTasks, listener: ListenerStatus, peers: DocumentValue?) -> String {
        var gauges: [(label: String, dimensions: [(String, String)], value: Double)] = []
        // One scrape at a time: two (Prometheus and the dashboard) would trade gauges mid-way.
        scraping.lock()
        defer { scraping.unlock() }
        for name in directory.databaseNames() where served(name) {
            guard let db = try? directory.database(name) else { continue }
            let size = db.size()
            gauges.append(("syncnode_database_size_bytes", [("database", name)], Double(size.file)))
            gauges.append(("syncnode_blob_size_bytes", [("database", name)], Double(size.blobs)))
            watchWrites(db)
        }
        let running = tasks.running
        for task in running {
            let lag = max(0, task.status.progress.total - task.status.progress.completed)
            gauges.append(("syncnode_replication_lag_changes", [("source", task.source), ("target", task.target)], Double(lag)))
        }
        gauges.append(("syncnode_replications_running", [], Double(running.count)))
        gauges.append(("syncnode_open_connections", [], Double(listener.activeConnections)))
        if case .array(let all)? = peers {
            let trusted = all.filter { if case .dictionary(let p) = $0, case .bool(true)? = p["trusted"] { true } else { false } }.count
            gauges.append(("syncnode_peers", [("state", "trusted")], Double(trusted)))
            gauges.append(("syncnode_peers", [("state", "untrusted")], Double(all.count - trusted)))
            for entry in SyncStatus(peers: .array(all)).entries {
                guard let keyspace = entry.keyspace else { continue }
                gauges.append(("syncnode_in_sync", [("peer", entry.peer), ("keyspace", keyspace)], entry.inSync ? 1 : 0))
                for direction in ["push", "pull"] {
                    guard let count = entry.pending(direction) else { continue }
                    gauges.append(("syncnode_pending_changes", [("peer", entry.peer), ("keyspace", keyspace), ("direction", direction)], Double(count)))
                }
            }
        }
        record(gauges)
        let totals = tasks.totals
        let moved = state.withLock { s in
            defer { s.replicated = totals }
            return ReplicationResult(pushed: totals.pushed - s.replicated.pushed, pulled: totals.pulled - s.replicated.pulled)
        }
        CoreMetrics.Counter(label: "syncnode_documents_replicated_total", dimensions: [("direction", "push")], factory: factory).increment(by: max(0, moved.pushed))
        CoreMetrics.Counter(label: "syncnode_documents_replicated_total", dimensions: [("direction", "pull")], factory: factory).increment(by: max(0, moved.pulled))
        // Bodies as they crossed the wire: gzip-encoded ones at their encoded size.
        let bytes = state.withLock { s in
            // The larger: an older scrape's figures, read before this lock, must not count bytes twice.
            defer { s.bodyBytes = (max(s.bodyBytes.sent, listener.bytesSent), max(s.bodyBytes.received, listener.bytesReceived)) }
            return (sent: listener.bytesSent - s.bodyBytes.sent, received: listener.bytesReceived - s.bodyBytes.received)
        }
        CoreMetrics.Counter(label: "syncnode_http_body_bytes_total", dimensions: [("direction", "sent")], factory: factory).increment(by: max(0, bytes.sent))
        CoreMetrics.Counter(label: "syncnode_http_body_bytes_total", dimensions: [("direction", "received")], factory: factory).increment(by: max(0, bytes.received))
        return registry.emitToString()
    }

    /// Sets this scrape's gauges; a series not among them (a replication that ended, a database
    /// closed) is dropped rather than left at its last value.
    private func record(_ gauges: [(label: String, dimensions: [(String, String)], value: Double)]) {
        let stale = state.withLock { s -> [CoreMetrics.Gauge] in
            var current: [String: CoreMetrics.Gauge] = [:]
            for gauge in gauges {
                let key = gauge.label + gauge.dimensions.map { "\u{0}\($0.0)=\($0.1)" }.joined()
                let made = s.gauges.removeValue(forKey: key)
                    ?? CoreMetrics.Gauge(label: gauge.label, dimensions: gauge.dimensions, factory: factory)
                made.record(gauge.value)
                current[key] = made
            }
            defer { s.gauges = current }
            return Array(s.gauges.values)
        }
        for gauge in stale { gauge.destroy() }
    }

    /// Counts the writes to `database`'s collections from now on (once per collection), by origin.
    private func watchWrites(_ database: Database) {
        let collections = (try? database.allCollections()) ?? []
        for collection in collections {
            // The UUID too: a database deleted and made again under its name has new collections to watch.
            let key = "\(database.uuid)\u{0}\(collection.fullName)"
            guard state.withLock({ $0.watched[key] == nil }) else { continue }
            let factory = self.factory, name = database.name
            let token = collection.addChangeListener { change in
                var counts: [String: Int] = [:]
                for document in change.documents {
                    let origin = switch document.origin {
                    case .local: "local"
                    case .client: "client"
                    case .replication: "replication"
                    }
                    counts[origin, default: 0] += 1
                }
                for (origin, count) in counts {
                    CoreMetrics.Counter(label: "syncnode_documents_written_total", dimensions: [("database", name), ("origin", origin)], factory: factory)
                        .increment(by: count)
                }
            }
            state.withLock { $0.watched[key] = token }
        }
    }

    /// Stops counting writes (the listener stopped).
    func stop() {
        let tokens = state.withLock { s in
            defer { s.watched = [:] }
            return Array(s.watched.values)
        }
        for token in tokens { token.remove() }
    }
}
