import AsyncHTTPClient
import Foundation
@_exported import SyncNodeTestSupport
import NIOHTTP1
import NIOCore
import NIOPosix
import NIOSSL
@testable import SyncNodeStore
@testable import SyncNodeSync

/// A listener on loopback over HTTPS with Basic auth, and a client that pins its certificate.
final class ListenerHarness: @unchecked Sendable {
    let directory: URL
    let node: NodeDirectory
    let listener: Listener
    let client: HTTPClient
    let base: String
    static let user = "ann"
    static let password = "s3cret:pa$$"

    init(auth: Bool = true, tls: Bool = true, directory existing: URL? = nil, authFailuresPerMinute: Int = 10,
         databases: [String]? = nil, faultInjector: FaultInjector? = nil, idleTimeout: Duration = .seconds(60),
         maxConnectionsPerAddress: Int = 256, peerTrust: (trusted: [String], firstUse: Bool)? = nil,
         onUntrustedPeer: (@Sendable (String, String) -> Void)? = nil, authenticator: ListenerAuthenticator? = nil,
         maxRequestBodySize: Int = 64 << 20, maxAttachmentSize: Int = 16 << 30, answerMemoryBudget: Int = 96 << 20) async throws {
        directory = existing ?? FileManager.default.temporaryDirectory.appendingPathComponent("syncnode-listener-\(UUID().uuidString)")
        node = try NodeDirectory(url: directory)
        var config = ListenerConfiguration(
            directory: node, databases: databases, host: "127.0.0.1", disableTLS: !tls,
            authenticator: auth ? authenticator ?? .users([Self.user: Self.password]) : nil, allowedOrigins: ["http://app.example"],
            idleTimeout: idleTimeout, authFailuresPerMinute: authFailuresPerMinute, maxConnectionsPerAddress: maxConnectionsPerAddress)
        config.maxRequestBodySize = maxRequestBodySize
        config.maxAttachmentSize = maxAttachmentSize
        config.answerMemoryBudget = answerMemoryBudget
        let node = self.node
        config.trustedPeers = try peerTrust.map { try TrustStore(directory: node, trusted: $0.trusted, trustOnFirstUse: $0.firstUse) }
        var environment = ListenerEnvironment(onUntrustedPeer: onUntrustedPeer)
        environment.faultInjector = faultInjector
        listener = Listener(config: config, environment: environment)
        try await listener.start()
        guard let port = listener.port else { throw SyncError.listenerFailed("no port") }
        base = "\(tls ? "https" : "http")://127.0.0.1:\(port)"
        // The connect timeout also bounds the wait for a pooled connection: generous, since
        // 100 concurrent clients share the pool while the rest of the suite loads the machine
        // (20 s was once too short for `hundredConcurrentClientsLoseNoWrite` beside the hostile suite).
        var configuration = HTTPClient.Configuration(timeout: .init(connect: .seconds(60), read: .seconds(30)))
        if tls { configuration.tlsConfiguration = try node.tlsIdentity().pinningClientConfiguration() }
        client = HTTPClient(eventLoopGroup: MultiThreadedEventLoopGroup.singleton, configuration: configuration)
    }

    func shutdown(removeDirectory: Bool = true) async {
        try? await client.shutdown()
        await listener.stop()
        node.closeAll()
        if removeDirectory { try? FileManager.default.removeItem(at: directory) }
    }

    struct Reply {
        let status: Int
        let headers: [String: String]
        let body: String
        let bytes: [UInt8]
        var json: DocumentValue { (try? DocumentValue(json: body)) ?? .null }
        subscript(_ key: String) -> DocumentValue? {
            if case .dictionary(let d) = json { return d[key] }
            return nil
        }
    }

    static var authorization: String {
        "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
    }

    func request(
        _ method: HTTPMethod, _ path: String, body: String? = nil, bytes: [UInt8]? = nil,
        headers: [(String, String)] = [], auth: String? = ListenerHarness.authorization
    ) async throws -> Reply {
        var request = HTTPClientRequest(url: base + path)
        request.method = method
        if let auth { request.headers.add(name: "Authorization", value: auth) }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body {
            request.headers.add(name: "Content-Type", value: "application/json")
            request.body = .bytes(ByteBuffer(string: body))
        } else if let bytes {
            request.body = .bytes(ByteBuffer(bytes: bytes))
        }
        let response = try await client.execute(request, timeout: .seconds(30))
        let data = try await response.body.collect(upTo: 64 << 20)
        var h: [String: String] = [:]
        for header in response.headers { h[header.name.lowercased()] = header.value }
        return Reply(status: Int(response.status.code), headers: h, body: String(buffer: data), bytes: Array(buffer: data))
    }
}

/// Runs `body`, then `cleanup`, also when `body` throws: a `defer` that can
/// await (a `defer { Task { ... } }` would leave listeners running into the next tests).
func withCleanup(_ cleanup: () async -> Void, _ body: () async throws -> Void) async throws {
    do {
        try await body()
    } catch {
        await cleanup()
        throw error
    }
    await cleanup()
}

extension DocumentValue {
    var string: String? { if case .string(let s) = self { return s } else { return nil } }
    var int: Int64? { if case .int(let i) = self { return i } else { return nil } }
    var array: [DocumentValue]? { if case .array(let a) = self { return a } else { return nil } }
}

