import Hummingbird

/// Counts each request by method and status, and how long it took to answer (not to stream the
/// answer's body), for `/_node/_local/_prometheus`.
struct RequestMetricsMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    let metrics: NodeMetrics

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let started = ContinuousClock.now
        let response = try await next(request, context)
        metrics.request(method: request.method.rawValue, status: response.status.code, duration: started.duration(to: .now))
        return response
    }
}
