import Hummingbird

/// For tests only (``ListenerEnvironment/faultInjector``): answers the requests it names with
/// the error status it says, or holds them as long as it says, before they are routed.
struct FaultInjectionMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    let injector: FaultInjector

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        await injector.hold(request.method.rawValue, request.uri.path)
        if let status = injector.status(request.method.rawValue, request.uri.path) {
            throw CouchError(status: status, error: "injected_fault", reason: "fault injected for testing")
        }
        return try await next(request, context)
    }
}
