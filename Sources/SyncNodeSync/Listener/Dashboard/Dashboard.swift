import HTTPTypes
import Hummingbird
import NIOCore

/// The web dashboard: three files built into the binary (`Assets/`, embedded by the package
/// manifest), served at `/_utils/` to anyone. The page itself signs in through `/_session`
/// and reads everything else from the API, so it shows nothing the signed-in user could not
/// ask for with curl.
enum Dashboard {
    /// The answer to `GET /_utils` (a redirect to `/_utils/`) and `GET /_utils/FILE`; 404 for a file it does not have.
    static func response(to request: Request) throws -> Response {
        let path = request.uri.path
        if path == "/_utils" { return Response(status: .movedPermanently, headers: [.location: "/_utils/"]) }
        let file: (bytes: [UInt8], type: String)
        switch path.dropFirst("/_utils/".count) {
        case "", "index.html": file = (PackageResources.index_html, "text/html; charset=utf-8")
        case "dashboard.js": file = (PackageResources.dashboard_js, "text/javascript; charset=utf-8")
        case "dashboard.css": file = (PackageResources.dashboard_css, "text/css; charset=utf-8")
        default: throw CouchError.notFound("The dashboard has no file '\(path)'.")
        }
        return Response(status: .ok, headers: headers(contentType: file.type), body: ResponseBody(byteBuffer: ByteBuffer(bytes: file.bytes)))
    }

    /// Documents, peer names and errors it shows come from others: the policy lets the page run
    /// its own script and talk to this node only, so text that slipped into markup could do nothing.
    private static func headers(contentType: String) -> HTTPFields {
        [
            .contentType: contentType,
            .contentSecurityPolicy: "default-src 'self'; img-src 'self' data:; style-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
            HTTPField.Name("Referrer-Policy")!: "no-referrer",
        ]
    }
}
