"""PouchDB 9 in headless Chromium (Debian's, driven by Playwright) syncing with a `syncnode serve`
process over HTTPS from a page of another origin, allowed with --cors-origin.

    check_pouchdb_browser.py POUCHDB_DIR SYNCNODE_BINARY

The page is served from a temporary folder (the PouchDB bundle is copied there, never into the
repository) on another origin, and syncs both ways with Basic auth through CORS; a page on the
node's own origin logs in with a session cookie. The script checks what the page and the node
hold afterwards. Prints "pouchdb-browser: ok" or exits non-zero.
"""
import base64, functools, http.server, json, os, shutil, ssl, subprocess, sys, tempfile, threading, urllib.parse, urllib.request
from playwright.sync_api import sync_playwright

pouch_dir, syncnode = sys.argv[1:3]
user, password = "ann", "pw:ä$"

PAGE = """<!doctype html><html><head><meta charset="utf-8"><title>PouchDB and a node</title>
<script src="pouchdb.min.js"></script></head><body><script>
const params = new URLSearchParams(location.search);
const remoteURL = params.get('remote');
(async () => {
  try {
    // Another site: Basic auth through CORS (browsers keep no third-party cookies).
    const remote = new PouchDB(remoteURL, {auth: {username: params.get('user'), password: params.get('password')}});
    const local = new PouchDB('browser-' + Date.now());
    await local.bulkDocs([{_id: 'from-browser-1', v: 1},
      {_id: 'from-browser-2', v: 2, _attachments: {'a.txt': {content_type: 'text/plain', data: btoa('hi from chromium')}}}]);
    const sync = await local.sync(remote);
    const all = await local.allDocs({include_docs: true});
    window.result = {ok: true, pushed: sync.push.docs_written, pulled: sync.pull.docs_written,
      docs: Object.fromEntries(all.rows.map(r => [r.id, r.doc.v]))};
  } catch (e) {
    window.result = {ok: false, error: String(e && (e.stack || e.message) || e)};
  }
})();
</script></body></html>"""


def main():
    page_dir = tempfile.mkdtemp(prefix="syncnode-page-")
    node_dir = tempfile.mkdtemp(prefix="syncnode-browser-node-")
    serve = None
    try:
        shutil.copy(os.path.join(pouch_dir, "9.0.0", "pouchdb.min.js"), page_dir)
        with open(os.path.join(page_dir, "index.html"), "w") as f:
            f.write(PAGE)
        class Quiet(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                pass
        handler = functools.partial(Quiet, directory=page_dir)
        httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=httpd.serve_forever, daemon=True).start()
        origin = f"http://127.0.0.1:{httpd.server_port}"

        serve = subprocess.Popen([syncnode, "--dir", node_dir, "serve", "--host", "127.0.0.1", "--user", user,
                                  "--no-advertise", "--no-browse", "--qr", "none", "--cors-origin", origin],
                                 env={**{k: v for k, v in os.environ.items() if k != "SWIFT_DETERMINISTIC_HASHING"}, "SYNCNODE_PASSWORD": password},
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = urllib.parse.urlsplit(serve.stdout.readline().split("listening on ", 1)[1].strip()).port
        base = f"https://127.0.0.1:{port}"
        context = ssl.create_default_context(cafile=os.path.join(node_dir, ".node/tls/cert.pem"))
        context.check_hostname = False
        authorization = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()

        def call(method, path, body=None):
            headers = {"Content-Type": "application/json", "Authorization": authorization}
            request = urllib.request.Request(base + path, method=method, headers=headers, data=None if body is None else json.dumps(body).encode())
            with urllib.request.urlopen(request, context=context) as response:
                return json.loads(response.read())

        call("PUT", "/shared")
        call("POST", "/shared/_bulk_docs", {"docs": [{"_id": "from-node-1", "v": 10}, {"_id": "from-node-2", "v": 20}]})

        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
            page = browser.new_context(ignore_https_errors=True).new_page()
            query = urllib.parse.urlencode({"remote": f"{base}/shared", "user": user, "password": password})
            # On the node's own origin, a cookie session: log in, then be known by the cookie alone.
            page.goto(f"{base}/_session")
            session = page.evaluate("""async ([name, password]) => {
                const login = await fetch('/_session', {method: 'POST', headers: {'Content-Type': 'application/json'},
                                                        body: JSON.stringify({name, password})});
                const me = await (await fetch('/_session')).json();
                return {login: login.status, name: me.userCtx.name, via: me.info.authenticated};
            }""", [user, password])
            assert session == {"login": 200, "name": user, "via": "cookie"}, session
            page.goto(f"{origin}/index.html?{query}")
            page.wait_for_function("window.result !== undefined", timeout=60000)
            result = page.evaluate("window.result")
            browser.close()

        assert result["ok"], result
        assert result["pushed"] == 2 and result["pulled"] == 2, result
        assert result["docs"] == {"from-browser-1": 1, "from-browser-2": 2, "from-node-1": 10, "from-node-2": 20}, result
        assert call("GET", "/shared/from-browser-1")["v"] == 1
        attachment = call("GET", "/shared/from-browser-2?attachments=true")["_attachments"]["a.txt"]
        assert base64.b64decode(attachment["data"]) == b"hi from chromium", attachment
        httpd.shutdown()
        print("pouchdb-browser: ok")
    finally:
        if serve:
            serve.terminate()
            serve.wait()
        shutil.rmtree(page_dir, ignore_errors=True)
        shutil.rmtree(node_dir, ignore_errors=True)


main()
