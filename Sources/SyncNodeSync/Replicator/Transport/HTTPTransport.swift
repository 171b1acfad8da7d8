import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import NIOSSL
import Synchronization
import SyncNodeStore

/// Requests to one CouchDB-compatible server, and its answers: the one place requests are
/// built (``request(_:_:body:accept:)``) and sent (``execute(_:deadline:)``), and answers read
/// as text or JSON. It knows HTTP, not the replication protocol (``HTTPRemote`` speaks that).
final class HTTPTransport: Sendable {
    /// `scheme://host:port`.
    let root: String
    private let client: HTTPClient
    /// Sent with every request: the configuration's headers and the authenticator's.
    private let headers: [(String, String)]
    let timeouts: PeerTimeouts
    /// Whether protocol answers are asked for gzip-encoded, and large JSON bodies sent so to a
    /// peer that takes them.
    let compression: Bool
    /// Set once the peer gzip-encoded an answer: it is a node (CouchDB does not encode its
    /// answers), which takes gzip-encoded bodies too.
    private let peerTakesGzip = Atomic(false)
    /// Set for good by a 415 for a gzip-encoded body (a proxy that encodes answers in front of
    /// a server that takes no encoded body): later answers cannot clear it.
    private let peerRefusedGzip = Atomic(false)
    /// JSON bodies below this size are sent as they are.
    static let compressedBodyMinimum = 1024

    /// What a request carries.
    enum Body {
        case none
        /// A JSON text.
        case json(String)
        /// A document with its attachment files, streamed as `multipart/related`.
        case upload(MultipartRelated.Upload)
    }

    init(root: String, client: HTTPClient, headers: [(String, String)], timeouts: PeerTimeouts, compression: Bool = true) {
        self.root = root
        self.client = client
        self.headers = headers
        self.timeouts = timeouts
        self.compression = compression
    }

    func shutdown() async { try? await client.shutdown() }

    /// A request for `path` (from the root, escaped). `accept` asks for JSON, as every protocol
    /// answer is (gzip-encoded, with ``compression``); an attachment's content is asked for as it is.
    func request(_ method: HTTPMethod, _ path: String, body: Body = .none, accept: Bool = true, encodeBody: Bool = true) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: root + path)
        request.method = method
        if accept { request.headers.add(name: "Accept", value: "application/json") }
        if accept, compression { request.headers.add(name: "Accept-Encoding", value: "gzip") }
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        switch body {
        case .none:
            break
        case .json(let text):
            request.headers.add(name: "Content-Type", value: "application/json")
            let bytes = ByteBuffer(string: text)
            if compression, encodeBody, bytes.readableBytes >= Self.compressedBodyMinimum, peerTakesGzip.load(ordering: .relaxed),
               !peerRefusedGzip.load(ordering: .relaxed),
               let encoded = try? GzipEncoder.encode(bytes) {
                request.headers.add(name: "Content-Encoding", value: "gzip")
                request.body = .bytes(encoded)
            } else {
                request.body = .bytes(bytes)
            }
        case .upload(let upload):
            request.headers.add(name: "Content-Type", value: upload.contentType)
            request.body = .stream(upload, length: .known(Int64(upload.length)))
        }
        return request
    }

    /// Sends `request`. The deadline is for the answer's head; its body, and an upload, go on
    /// while bytes keep moving (the read and write timeouts). Timeouts come back in words.
    ///
    /// - Throws: `SyncError.invalidIdentity` when the TLS handshake fails (a certificate no retry
    ///   will change), `SyncError.connectionFailed` and the client's errors, described.
    func execute(_ request: HTTPClientRequest, deadline: Duration = .seconds(300)) async throws -> HTTPClientResponse {
        do {
            return try await client.execute(request, timeout: .init(deadline))
        } catch let error as NIOSSLError {
            guard case .handshakeFailed = error else { throw error }
            // Stop with what to do, not after minutes of backoff.
            throw SyncError.invalidIdentity("TLS with \(root) failed (\(error)); pin the peer's certificate with a pairing URL (fp=...) or accept it on first use (acceptOnlySelfSignedServerCertificate)")
        } catch {
            throw timeouts.describe(error, peer: root)
        }
    }

    /// The answer to `method path` with a JSON `body`: its status and text, unparsed (documents
    /// are split from it as text).
    func text(_ method: HTTPMethod, _ path: String, json body: String? = nil) async throws -> (status: Int, text: String) {
        var request = request(method, path, body: body.map(Body.json) ?? .none)
        var response = try await execute(request)
        if response.status == .unsupportedMediaType, request.headers.contains(name: "Content-Encoding") {
            // It does not take gzip-encoded bodies after all: sent again as it is, once, and
            // from now on. The refusal is read first, so that its connection is used again.
            peerRefusedGzip.store(true, ordering: .relaxed)
            _ = try await text(of: response, upTo: 1 << 20)
            request = self.request(method, path, body: body.map(Body.json) ?? .none, encodeBody: false)
            response = try await execute(request)
        }
        return (Int(response.status.code), try await text(of: response, upTo: 1 << 30))
    }

    /// An answer's body as text, at most `limit` bytes.
    func text(of response: HTTPClientResponse, upTo limit: Int) async throws -> String {
        String(buffer: try await body(of: response, upTo: limit))
    }

    /// An answer's body, decoded when it is gzip-encoded (as it arrives, so that decoding
    /// overlaps the transfer): at most `limit` bytes either way.
    /// - Throws: 502 `bad_gateway` for another coding, or gzip data that does not decode.
    func body(of response: HTTPClientResponse, upTo limit: Int) async throws -> ByteBuffer {
        let decoder: GzipDecoder?
        switch response.headers.first(name: "Content-Encoding")?.lowercased() {
        case nil, "identity":
            decoder = nil
        case "gzip", "x-gzip":
            peerTakesGzip.store(true, ordering: .relaxed)
            decoder = try GzipDecoder(limit: limit)
        case let coding?:
            throw CouchError(status: 502, error: "bad_gateway", reason: "\(root) answered in Content-Encoding '\(coding)', which was not asked for")
        }
        do {
            guard let decoder else { return try await response.body.collect(upTo: limit) }
            var body = ByteBuffer()
            for try await piece in response.body {
                try decoder.feed(piece) { decoded in
                    var decoded = decoded
                    body.writeBuffer(&decoded)
                }
            }
            try decoder.finish()
            return body
        } catch let error as CouchError {
            throw CouchError(status: 502, error: "bad_gateway", reason: "\(root): its gzip-encoded answer: \(error.reason)")
        } catch {
            throw timeouts.describe(error, peer: root)
        }
    }

    /// The answer to `method path` with a JSON `body`, parsed. A non-2xx answer that is not JSON
    /// reads as `null` (its status tells); a 2xx one is a bad gateway.
    func json(_ method: HTTPMethod, _ path: String, json body: String? = nil) async throws -> (status: Int, value: DocumentValue) {
        let (status, text) = try await text(method, path, json: body)
        guard let value = try? DocumentValue(json: text) else {
            // A proxy's HTML page must not read as an empty answer ("nothing missing", "nothing refused").
            guard PeerStatus.success.contains(status) else { return (status, .null) }
            throw PeerStatus.notJSON(method, path, status)
        }
        return (status, value)
    }

    /// A 2xx answer's body, or the peer's error.
    func expect(_ method: HTTPMethod, _ path: String, json body: String? = nil) async throws -> DocumentValue {
        let (status, value) = try await json(method, path, json: body)
        guard PeerStatus.success.contains(status) else { throw PeerStatus.error(status, value) }
        return value
    }
}
