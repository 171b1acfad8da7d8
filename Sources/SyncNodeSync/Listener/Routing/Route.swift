import HTTPTypes
import Hummingbird

/// One path of the HTTP API: its pattern, and for each method it answers, who may call it
/// and what answers. ``RouteTable/listener`` lists them all; dispatch, the `Allow` list of a
/// 405 and every access check are read from there.
struct Route: Sendable {
    /// What answers a request once it is routed and allowed.
    typealias Handler = @Sendable (Handlers, RoutedRequest) async throws -> Response

    /// A path segment's pattern.
    enum Segment: Sendable, Equatable, ExpressibleByStringLiteral {
        /// Exactly this (percent-decoded) segment.
        case literal(String)
        /// A segment that does not start with `_`: a database or document name, never one of
        /// the `_` endpoints beside it.
        case name(Parameter)
        /// Any one segment.
        case any(Parameter)
        /// One segment or more, joined with `/`: `_local` IDs and attachment names may hold slashes.
        case rest(Parameter)

        /// `{db}`: a database name or `db.scope.collection`.
        static let keyspace = Segment.name(.keyspace)

        init(stringLiteral value: String) { self = .literal(value) }

        /// How the reference spells it: the literal, or the parameter in braces.
        var spelling: String {
            switch self {
            case .literal(let text): text
            case .name(let parameter), .any(let parameter), .rest(let parameter): "{\(parameter.rawValue)}"
            }
        }
    }

    /// The parts of a path a handler reads, named as the reference names them.
    enum Parameter: String, Sendable {
        case keyspace = "db", document = "doc", attachment, localID = "id", designDocument = "ddoc", index = "name"
        case fingerprint, invitation = "invitation", file
    }

    /// What one method of a route needs and does.
    struct Action: Sendable {
        let method: HTTPRequest.Method
        let access: Access
        /// Whether it changes what the node holds: a read-only node refuses it (403).
        let writes: Bool
        let handle: Handler

        static func get(_ access: Access, _ handle: @escaping Handler) -> Action {
            Action(method: .get, access: access, writes: false, handle: handle)
        }
        /// `writes: false` for a POST that only reads (a query in a body), or writes only what a
        /// read-only node still keeps.
        static func post(_ access: Access, writes: Bool = true, _ handle: @escaping Handler) -> Action {
            Action(method: .post, access: access, writes: writes, handle: handle)
        }
        static func put(_ access: Access, writes: Bool = true, _ handle: @escaping Handler) -> Action {
            Action(method: .put, access: access, writes: writes, handle: handle)
        }
        static func delete(_ access: Access, writes: Bool = true, _ handle: @escaping Handler) -> Action {
            Action(method: .delete, access: access, writes: writes, handle: handle)
        }
    }

    let pattern: [Segment]
    let actions: [Action]

    init(_ pattern: [Segment], _ actions: Action...) {
        self.pattern = pattern
        self.actions = actions
    }

    /// `/{db}/_local/{id}`: the pattern as the reference writes it.
    var path: String { "/" + pattern.map(\.spelling).joined(separator: "/") }

    /// The methods it answers, as a 405's `Allow` lists them: HEAD wherever GET is.
    var allowedMethods: [HTTPRequest.Method] {
        actions.flatMap { $0.method == .get ? [.get, .head] : [$0.method] }
    }

    /// The action for `method` (HEAD is GET without the body).
    func action(for method: HTTPRequest.Method) -> Action? {
        let wanted = method == .head ? .get : method
        return actions.first { $0.method == wanted }
    }

    /// The parameters `segments` give when they match the pattern; nil when they do not.
    func match(_ segments: [String]) -> [Parameter: String]? {
        // Most routes differ in length from the path: refused before anything is captured.
        if case .rest = pattern.last {
            guard segments.count >= pattern.count else { return nil }
        } else {
            guard segments.count == pattern.count else { return nil }
        }
        var parameters: [Parameter: String] = [:]
        var index = 0
        for segment in pattern {
            guard index < segments.count else { return nil }
            switch segment {
            case .literal(let text):
                guard segments[index] == text else { return nil }
            case .name(let parameter):
                guard !segments[index].hasPrefix("_") else { return nil }
                parameters[parameter] = segments[index]
            case .any(let parameter):
                parameters[parameter] = segments[index]
            case .rest(let parameter):
                parameters[parameter] = segments[index...].joined(separator: "/")
                index = segments.count
                continue
            }
            index += 1
        }
        return index == segments.count ? parameters : nil
    }
}
