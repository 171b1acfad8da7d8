import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// What a peer's answer means to a replication: which failures a retry may cure, and how an
/// error answer reads.
@Suite struct PeerStatusTests {
    @Test func onlyTimeoutsThrottlingAndServerTroubleAreRetried() {
        for status in [408, 429, 500, 502, 503, 504] {
            #expect(!Replicator.isPermanent(CouchError(status: status, error: "e", reason: "")), "\(status)")
        }
        for status in [400, 401, 403, 404, 409, 412, 413, 415] {
            #expect(Replicator.isPermanent(CouchError(status: status, error: "e", reason: "")), "\(status)")
        }
    }

    @Test func anErrorAnswerKeepsThePeersWordsAndAnyOtherShapeNamesTheStatus() throws {
        let refused = PeerStatus.error(403, try DocumentValue(json: #"{"error":"forbidden","reason":"read only"}"#))
        #expect(refused == CouchError(status: 403, error: "forbidden", reason: "read only"))
        let withoutReason = PeerStatus.error(409, try DocumentValue(json: #"{"error":"conflict"}"#))
        #expect(withoutReason == CouchError(status: 409, error: "conflict", reason: ""))
        #expect(PeerStatus.error(502, .null) == CouchError(status: 502, error: "http_error", reason: "HTTP 502"))
        #expect(PeerStatus.error(500, try DocumentValue(json: #"{"error":7}"#)).error == "http_error")
    }

    @Test func aPeerWithoutAnOptionalEndpointIsToldFromOneThatFails() {
        for status in [400, 404, 405] {
            #expect(PeerStatus.noDigest.contains(status) && PeerStatus.noBulkGet.contains(status))
        }
        #expect(PeerStatus.noBulkGet.contains(501) && !PeerStatus.noDigest.contains(501))
        for status in [401, 403, 500, 503] {
            #expect(!PeerStatus.noDigest.contains(status) && !PeerStatus.noBulkGet.contains(status), "\(status)")
        }
    }
}
