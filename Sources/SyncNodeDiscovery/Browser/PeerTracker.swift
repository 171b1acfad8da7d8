import Foundation
import Logging
import SyncNodeSync

/// Turns sightings into peers: one per advertised UUID, whatever the number
/// of interfaces and address families it was seen on, reported only once it
/// answers `GET /` at one of its addresses (with the advertised certificate),
/// and reported gone when its record goes or when it stops answering: a
/// crashed host's record lingers for over an hour.
actor PeerTracker {
    struct Options: Sendable {
        var ownUUID: String?
        var authenticator: BasicAuthenticator?
        var probeInterval: Duration
        var probeTimeout: Duration
        /// Failed probes in a row before a peer is reported gone.
        var failureLimit: Int
        /// Whether a peer with this certificate fingerprint holds a connection to this node now.
        var isConnected: (@Sendable (_ fingerprint: String) async -> Bool)?
    }

    /// How often a settled peer that holds a connection to this node is looked at instead of
    /// probed: a look is a lookup, and the peer is probed as soon as its connections are gone.
    static let connectedCheck = Duration.seconds(1)

    /// Where the looks' beat starts (``nextLook()``).
    private let epoch = ContinuousClock.now

    private struct Candidate {
        var sightings: [Sighting.Key: Sighting] = [:]
        var confirmed: Peer?
        var failures = 0
        /// Probes answered in a row.
        var answers = 0
        var prober: Task<Void, Never>?
        /// One probe per address, port and fingerprint: later checks reuse its connection.
        var probes: [String: NodeProbe] = [:]
    }

    private let options: Options
    private let logger: Logger
    private let emit: @Sendable (PeerEvent) -> Void
    private var candidates: [String: Candidate] = [:]

    init(options: Options, logger: Logger, emit: @escaping @Sendable (PeerEvent) -> Void) {
        self.options = options
        self.logger = logger
        self.emit = emit
    }

    /// The peers confirmed now.
    var peers: [Peer] { candidates.values.compactMap(\.confirmed).sorted { $0.name < $1.name } }

    func handle(_ event: SightingEvent) {
        switch event {
        case .resolved(let sighting):
            guard sighting.record.uuid != options.ownUUID else { return }
            // The same key may have moved to another UUID (a node restarted with new data).
            forget(sighting.key, except: sighting.record.uuid)
            let uuid = sighting.record.uuid
            let previous = candidates[uuid, default: Candidate()].sightings.updateValue(sighting, forKey: sighting.key)
            // Something new to check (a restarted node's new port, a new TXT): check now, not at the next interval.
            if previous != sighting || candidates[uuid]?.prober == nil {
                // Probed again until settled, connected or not: what it answers may have changed.
                candidates[uuid]?.answers = 0
                candidates[uuid]?.prober?.cancel()
                candidates[uuid]?.prober = Task { [weak self] in await self?.probeLoop(uuid) }
            }
        case .removed(let key):
            forget(key, except: nil)
        }
    }

    /// Stops probing.
    func stop() async {
        let all = candidates.values
        candidates = [:]
        for candidate in all {
            candidate.prober?.cancel()
            for probe in candidate.probes.values { await probe.shutdown() }
        }
    }

    private func forget(_ key: Sighting.Key, except keep: String?) {
        for (uuid, candidate) in candidates where uuid != keep && candidate.sightings[key] != nil {
            candidates[uuid]?.sightings[key] = nil
            guard candidates[uuid]?.sightings.isEmpty == true else { continue }
            candidate.prober?.cancel()
            candidates[uuid] = nil
            let probes = candidate.probes.values
            Task { for probe in probes { await probe.shutdown() } }
            if let gone = candidate.confirmed {
                logger.info("peer withdrew its service", metadata: ["peer": "\(gone.name)", "uuid": "\(uuid)"])
                emit(.disappeared(gone))
            }
        }
    }

    private func probeLoop(_ uuid: String) async {
        while !Task.isCancelled {
            guard candidates[uuid] != nil else { return }
            if await isConnected(uuid) {
                try? await Task.sleep(until: nextLook(), clock: .continuous)
                continue
            }
            let answer = await Self.probe(probes(for: uuid), logger: logger)
            guard !Task.isCancelled, candidates[uuid] != nil else { return }
            settle(uuid, answer)
            try? await Task.sleep(for: nextProbe(uuid))
        }
    }

    /// The next beat of ``connectedCheck`` from `epoch`: every connected peer is looked at on
    /// the same beat, so the tracker wakes once a second for all of them, not once for each
    /// at its own moment (in an idle mesh of twenty, about a third of a node's wake-ups).
    private func nextLook() -> ContinuousClock.Instant {
        let beats = Int((epoch.duration(to: .now) / Self.connectedCheck).rounded(.down)) + 1
        return epoch + Self.connectedCheck * beats
    }

    /// Answers in a row after which a peer counts as settled.
    static let settledAfter = 5

    /// How long until the next probe. Every probe is a request on both nodes, and an idle mesh
    /// of ten probed each peer every 2 s: a settled peer is probed half as often, and one that
    /// failed a probe twice as often, so a vanished peer is still reported gone within about
    /// the same time (at most the doubled interval, plus the halved one, plus two timeouts).
    private func nextProbe(_ uuid: String) -> Duration {
        guard let candidate = candidates[uuid] else { return options.probeInterval }
        if candidate.failures > 0 { return options.probeInterval / 2 }
        return candidate.answers >= Self.settledAfter ? options.probeInterval * 2 : options.probeInterval
    }

    /// Whether a settled peer holds a connection to this node (with a certificate it advertises)
    /// and was heard from on it in the last seconds: it is there, and need not be asked
    /// (``ConnectedPeers``).
    private func isConnected(_ uuid: String) async -> Bool {
        guard let check = options.isConnected, let candidate = candidates[uuid], candidate.confirmed != nil,
              candidate.failures == 0, candidate.answers >= Self.settledAfter else { return false }
        for fingerprint in Set(candidate.sightings.values.compactMap(\.record.fingerprint)) where await check(fingerprint) { return true }
        return false
    }

    /// The candidate's sightings in the order to try them, each with its probe
    /// (made on first use; those of sightings that went away are closed).
    private func probes(for uuid: String) -> [(Sighting, NodeProbe)] {
        guard var candidate = candidates[uuid] else { return [] }
        var kept: [String: NodeProbe] = [:]
        // One pair per address, port and certificate: the same address seen on two interfaces is tried once.
        let pairs = candidate.sightings.values.sorted(by: Self.preferred).compactMap { sighting -> (Sighting, NodeProbe)? in
            let record = sighting.record
            let key = "\(sighting.address) \(record.port) \(record.fingerprint ?? "-")"
            guard kept[key] == nil else { return nil }
            let probe = candidate.probes[key] ?? NodeProbe(
                scheme: record.tls ? "https" : "http", host: sighting.address, port: record.port, fingerprint: record.fingerprint,
                authenticator: options.authenticator, timeout: options.probeTimeout)
            kept[key] = probe
            return (sighting, probe)
        }
        let stale = candidate.probes.filter { kept[$0.key] == nil }.values
        if !stale.isEmpty { Task { for probe in stale { await probe.shutdown() } } }
        candidate.probes = kept
        candidates[uuid] = candidate
        return pairs
    }

    private func settle(_ uuid: String, _ answer: Peer?) {
        guard var candidate = candidates[uuid] else { return }
        defer { candidates[uuid] = candidate }
        guard let peer = answer else {
            candidate.failures += 1
            candidate.answers = 0
            if let gone = candidate.confirmed, candidate.failures >= options.failureLimit {
                logger.info("peer stopped answering", metadata: ["peer": "\(gone.name)", "uuid": "\(uuid)"])
                candidate.confirmed = nil
                emit(.disappeared(gone))
            }
            return
        }
        candidate.failures = 0
        candidate.answers += 1
        switch candidate.confirmed {
        case nil: emit(.appeared(peer))
        case let old? where old != peer: emit(.updated(peer))
        default: break
        }
        candidate.confirmed = peer
    }

    /// IPv4 first, then routable IPv6, then link-local.
    private static func preferred(_ a: Sighting, _ b: Sighting) -> Bool {
        func rank(_ s: Sighting) -> Int { s.address.contains(":") ? (s.address.contains("%") ? 2 : 1) : 0 }
        return (rank(a), a.address) < (rank(b), b.address)
    }

    /// The peer as it answers at the first address that works, or nil.
    private static func probe(_ probes: [(Sighting, NodeProbe)], logger: Logger) async -> Peer? {
        let addresses = probes.map(\.0.address).reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        for (sighting, probe) in probes {
            let record = sighting.record
            do {
                if case .uuid(let seen) = try await probe.identify(), seen != record.uuid {
                    logger.warning("a service answers with another uuid than it advertises", metadata: [
                        "name": "\(record.name)", "advertised": "\(record.uuid)", "answered": "\(seen)"])
                    continue
                }
                return Peer(record: record, host: sighting.address, addresses: addresses)
            } catch {
                logger.debug("probe failed", metadata: ["name": "\(record.name)", "address": "\(sighting.address)", "error": "\(error)"])
            }
        }
        return nil
    }
}
