import Hummingbird

/// Finds the request's route in the table and keeps it in the context for the steps after it;
/// a path the table does not know is a 404, a method its route does not take a 405 with `Allow`,
/// and a `{db}` that is not a keyspace a 400.
struct RoutingMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    let table: RouteTable

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        switch table.resolve(request.method, try RouteTable.segments(request.uri.path)) {
        case .notFound:
            throw CouchError.notFound()
        case .methodNotAllowed(let methods):
            return HTTP.error(.methodNotAllowed(methods.map(\.rawValue).joined(separator: ",")),
                              headers: [.allow: methods.map(\.rawValue).joined(separator: ", ")])
        case .found(let route, let action, let parameters):
            var context = context
            let keyspace = try parameters[.keyspace].map(Handlers.keyspace)
            context.route = ListenerContext.RouteMatch(route: route, action: action, parameters: parameters, keyspace: keyspace)
            return try await next(request, context)
        }
    }
}
