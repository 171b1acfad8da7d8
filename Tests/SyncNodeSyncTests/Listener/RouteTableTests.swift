import Foundation
import HTTPTypes
import NIOHTTP1
import Testing
@testable import SyncNodeStore
@testable import SyncNodeSync

/// The route table against the HTTP API reference, and what every route answers before it
/// reaches its handler: 405 with the methods it takes, 401 without a sign-in where one is needed.
@Suite struct RouteTableTests {
    /// A path of the reference's table with its placeholders filled in.
    static func sample(_ documented: String) -> String {
        let values = ["{db}": "db", "{doc}": "doc", "{attachment}": "att.txt", "{id}": "x", "{invitation}": "i1", "{fingerprint}": "fp",
                      "{ddoc}": "d", "{name}": "n", "{file}": "index.html"]
        return values.reduce(documented) { $0.replacingOccurrences(of: $1.key, with: $1.value) }
    }

    /// `(path, methods)` of each row of the reference's endpoint table (a row may list several paths).
    static func documentedEndpoints() throws -> [(path: String, methods: [HTTPRequest.Method])] {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("docs/HTTP-API.md"), encoding: .utf8)
        var out: [(String, [HTTPRequest.Method])] = []
        for line in text.split(separator: "\n") where line.hasPrefix("| `/") {
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count >= 2 else { continue }
            let methods = cells[1].split(separator: ",").compactMap { HTTPRequest.Method(String($0.trimmingCharacters(in: .whitespaces))) }
            for path in cells[0].split(separator: ",") {
                out.append((path.trimmingCharacters(in: CharacterSet(charactersIn: " `")), methods))
            }
        }
        return out
    }

    static func segments(_ path: String) throws -> [String] { try RouteTable.segments(path) }

    @Test func everyDocumentedEndpointIsRoutedAndEveryRouteDocumented() throws {
        let documented = try Self.documentedEndpoints()
        #expect(documented.count > 40)
        var reached = Set<String>()
        for (path, methods) in documented {
            #expect(!methods.isEmpty, "\(path): no methods in the reference")
            for method in methods {
                guard case .found(let route, _, _) = RouteTable.listener.resolve(method, try Self.segments(Self.sample(path))) else {
                    Issue.record("\(method) \(path) is documented but not routed")
                    continue
                }
                reached.insert("\(method) \(route.path)")
            }
        }
        for route in RouteTable.listener.routes {
            for action in route.actions {
                let isDocumented = reached.contains("\(action.method) \(route.path)")
                #expect(isDocumented, "\(action.method) \(route.path) is routed but not documented")
            }
        }
    }

    @Test func accessLevelsAreConsistent() {
        for route in RouteTable.listener.routes {
            let keyed = route.pattern.contains(.keyspace)
            for action in route.actions {
                // A database's access is read from the database the path names.
                if case .database = action.access { #expect(keyed, "\(route.path): database access without {db}") }
                // Nothing before sign-in changes what the node holds.
                if action.access == .open { #expect(!action.writes, "\(action.method) \(route.path) writes before sign-in") }
                // A reader writes nothing a read-only node would refuse.
                if action.access == .reader { #expect(!action.writes, "\(action.method) \(route.path): a reader's write") }
            }
        }
        // First match wins: no route may be hidden behind an earlier one.
        let routes = RouteTable.listener.routes
        for (i, route) in routes.enumerated() {
            let path = try? Self.segments(Self.sample(route.path))
            let first = routes.firstIndex { path.flatMap($0.match) != nil }
            #expect(first == i, "\(route.path) is reached by an earlier route")
        }
    }

    /// Every route, asked without credentials and with a method it does not take, answers 405
    /// with its `Allow` list (no sign-in needed to learn that), and each method that needs a
    /// sign-in answers 401 without one.
    @Test func methodsAndSignInAreCheckedFromTheTable() async throws {
        let h = try await ListenerHarness()
        try await withCleanup({ await h.shutdown() }) {
            for route in RouteTable.listener.routes {
                let path = Self.sample(route.path)
                let reply = try await h.request(.PATCH, path, auth: nil)
                #expect(reply.status == 405 && reply["error"]?.string == "method_not_allowed", "PATCH \(path): \(reply.status)")
                #expect(reply.headers["allow"] == route.allowedMethods.map(\.rawValue).joined(separator: ", "), "PATCH \(path)")
                for action in route.actions where action.access != .open {
                    let asked = try await h.request(HTTPMethod(rawValue: action.method.rawValue), path, body: action.method == .get ? nil : "{}", auth: nil)
                    #expect(asked.status == 401, "\(action.method) \(path) without a sign-in: \(asked.status)")
                }
            }
        }
    }
}
