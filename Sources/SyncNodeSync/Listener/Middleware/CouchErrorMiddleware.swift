import HTTPTypes
import Hummingbird
import Logging
import NIOHTTP1
import SyncNodeStore

/// Turns every error thrown on the way to an answer into CouchDB's JSON shape: `CouchError` as
/// it is, `StoreError` by its kind, anything else as a 500 that is logged.
struct CouchErrorMiddleware: RouterMiddleware {
    typealias Context = ListenerContext

    let logger: Logger

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let error as CouchError {
            // No challenge for the dashboard (its scripts say X-Requested-With; its event stream and
            // images carry its cookie): the browser would pop up a login dialog and keep what is typed.
            let challenge = error.status == 401 && request.headers[Self.requestedWith] == nil
                && request.headers[.cookie]?.contains("AuthSession=") != true
            return HTTP.error(error, headers: challenge ? [.wwwAuthenticate: #"Basic realm="syncnode""#] : [:])
        } catch let error as StoreError {
            return HTTP.error(CouchError(error))
        } catch let error as HTTPParserError {
            // The connection's framing is broken: its channel answers and closes.
            throw error
        } catch {
            logger.error("request failed", metadata: ["method": "\(request.method)", "path": "\(request.uri.path)", "error": "\(error)"])
            return HTTP.error(CouchError(status: 500, error: "unknown_error", reason: "\(error)"))
        }
    }

    static let requestedWith = HTTPField.Name("X-Requested-With")!
}
