import Hummingbird
import Logging
import NIOCore

/// Answers every request: the middleware, outermost first (answer writing, metrics, CORS,
/// errors into CouchDB's JSON shape, fault injection for tests, routing, gzip for the large
/// protocol answers, sign-in and access),
/// then the handler of the route ``RouteTable/listener`` matched.
struct ListenerResponder: HTTPResponder {
    typealias Context = ListenerContext

    let handlers: Handlers
    private let middleware: any MiddlewareProtocol<Request, Response, Context>

    init(handlers: Handlers, allowedOrigins: [String], stats: ListenerStats, faultInjector: FaultInjector?, logger: Logger) {
        self.handlers = handlers
        middleware = Self.stack {
            AnswerWritingMiddleware(stats: stats)
            RequestMetricsMiddleware(metrics: handlers.metrics)
            CrossOriginMiddleware(allowedOrigins: allowedOrigins)
            CouchErrorMiddleware(logger: logger)
            if let faultInjector { FaultInjectionMiddleware(injector: faultInjector) }
            RoutingMiddleware(table: .listener)
            AnswerCompressionMiddleware()
            AuthenticationMiddleware(handlers: handlers)
        }
    }

    private static func stack(
        @MiddlewareFixedTypeBuilder<Request, Response, Context> _ build: () -> some MiddlewareProtocol<Request, Response, Context>
    ) -> any MiddlewareProtocol<Request, Response, Context> {
        build()
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        try await middleware.handle(request, context: context) { request, context in
            guard let match = context.route else { throw CouchError.notFound() }
            let routed = RoutedRequest(request: request, context: context, parameters: match.parameters, keyspace: match.keyspace, principal: context.principal)
            // The connection is known to the handler too: work only its client waits for can end when it leaves.
            return try await ClientDeparture.$connection.withValue(context.channel) {
                try await match.action.handle(handlers, routed)
            }
        }
    }
}
