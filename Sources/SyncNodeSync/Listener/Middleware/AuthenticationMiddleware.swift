import Hummingbird

/// Signs the request in (unless its route is open), checks the access its route needs, and
/// keeps who asks in the context; a refreshed session cookie goes out with the answer.
struct AuthenticationMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    let handlers: Handlers

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let match = context.route else { throw CouchError.notFound() }
        let login = match.action.access == .open ? nil : try await handlers.authentication.check(request, context: context)
        if let login { try handlers.authorize(match.action.access, keyspace: match.keyspace, principal: login.principal) }
        // After the sign-in (who asks learns first whether they may), and on open routes too.
        if match.action.writes { try handlers.checkWritable() }
        guard let login else { return try await next(request, context) }
        var context = context
        context.principal = login.principal
        // Answers that outlive the request (feeds, jobs) recheck who this sign-in names now.
        var response = try await Authentication.$ofRequest.withValue(Authentication.CurrentPrincipal(login.current)) {
            try await next(request, context)
        }
        if let cookie = login.refreshedCookie { response.headers[.setCookie] = cookie }
        return response
    }
}
