import Hummingbird
import NIOCore
import SyncNodeStore

/// A request the route table matched and allowed: what a route's handler is given.
struct RoutedRequest: Sendable {
    let request: Request
    let context: ListenerContext
    /// The path's parts the route's pattern names.
    let parameters: [Route.Parameter: String]
    /// `{db}`, parsed (nil on a route without one).
    let parsedKeyspace: Keyspace?
    /// Who asks (nobody, on an ``Route/Access/open`` route).
    let principal: Principal

    init(request: Request, context: ListenerContext, parameters: [Route.Parameter: String], keyspace: Keyspace?, principal: Principal) {
        (self.request, self.context, self.parameters, parsedKeyspace, self.principal) = (request, context, parameters, keyspace, principal)
    }

    /// The path part the route names `parameter`.
    func callAsFunction(_ parameter: Route.Parameter) throws -> String {
        guard let value = parameters[parameter] else {
            // Only a route whose handler reads what its pattern does not name gets here.
            throw CouchError(status: 500, error: "internal_server_error", reason: "the route has no {\(parameter.rawValue)}")
        }
        return value
    }

    /// `{db}`.
    var keyspace: Keyspace {
        get throws {
            guard let parsedKeyspace else { return try Handlers.keyspace(self(.keyspace)) }
            return parsedKeyspace
        }
    }

    /// The request's connection: work only its client waits for can end when it leaves.
    var connection: any Channel { context.channel }

    /// Who writes, as a collection's validator is told.
    var author: WriteAuthor { WriteAuthor(name: principal.name, roles: principal.roles, origin: .client) }
}
