"""The dashboard at /_utils/ in headless Chromium (Debian's, driven by Playwright), against two
real `syncnode serve` processes on loopback, as an operator would use it.

    check_dashboard.py SYNCNODE_BINARY SCREENSHOT_DIR

Node beta pairs with node alpha by URL (`serve --pair`); in alpha's dashboard the operator
signs in, pairs alpha with beta on the Peers page and sees beta appear, edits a document
and sees it arrive on beta, resolves a conflict, runs a SQL++ query, and looks at the
replications and metrics. Each page is checked for its elements, then photographed into
SCREENSHOT_DIR. Prints "dashboard: ok" or exits non-zero.
"""
import base64, json, os, shutil, ssl, subprocess, sys, tempfile, time, urllib.error, urllib.parse, urllib.request
from playwright.sync_api import sync_playwright, expect

syncnode, shots = sys.argv[1:3]
user, password = "operator", "dash:bo@rd ü"
os.makedirs(shots, exist_ok=True)


class Node:
    """A `syncnode serve` child on loopback, ready once it printed its pairing URL."""

    def __init__(self, name, *arguments):
        self.dir = tempfile.mkdtemp(prefix=f"syncnode-dashboard-{name}-")
        env = {k: v for k, v in os.environ.items() if k != "SWIFT_DETERMINISTIC_HASHING"}
        env["SYNCNODE_PASSWORD"] = password
        self.process = subprocess.Popen(
            [syncnode, "--dir", self.dir, "serve", "--host", "127.0.0.1", "--user", user, "--name", name,
             "--no-advertise", "--no-browse", "--qr", "none", *arguments],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        assert "listening on " in line, f"{name} did not start: {line!r}"
        self.pairing_url = line.split("listening on ", 1)[1].strip()
        self.base = "https://127.0.0.1:%d" % urllib.parse.urlsplit(self.pairing_url).port
        self.uuid = urllib.parse.parse_qs(urllib.parse.urlsplit(self.pairing_url).query)["uuid"][0]
        self.context = ssl.create_default_context(cafile=os.path.join(self.dir, ".node/tls/cert.pem"))
        self.context.check_hostname = False

    def call(self, method, path, body=None):
        headers = {"Content-Type": "application/json",
                   "Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
        request = urllib.request.Request(self.base + path, method=method, headers=headers,
                                         data=None if body is None else json.dumps(body).encode())
        try:
            with urllib.request.urlopen(request, context=self.context) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)


def eventually(what, condition, seconds=60):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if condition():
            return
        time.sleep(0.25)
    raise AssertionError(f"not within {seconds} s: {what}")


def shoot(page, name):
    page.screenshot(path=os.path.join(shots, f"{name}.png"), full_page=True)


def check_labels(page, where):
    """Every form control is named for a screen reader."""
    unnamed = page.evaluate("""() => [...document.querySelectorAll('input, textarea, select')]
        .filter((e) => e.type !== 'hidden' && !e.labels?.length && !e.getAttribute('aria-label') && !e.getAttribute('aria-labelledby'))
        .map((e) => e.id || e.outerHTML.slice(0, 60))""")
    assert not unnamed, f"{where}: controls without a label: {unnamed}"


# Conflicts stay for the operator to resolve (the default would resolve them as they replicate).
alpha = Node("alpha", "--conflicts", "keep")
beta = Node("beta", "--conflicts", "keep", "--pair", alpha.pairing_url)
try:
    assert alpha.call("PUT", "/default/note", {"text": "written by the API"})[0] == 201
    eventually("beta pulls the note from alpha", lambda: beta.call("GET", "/default/note")[0] == 200)

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        context = browser.new_context(ignore_https_errors=True, viewport={"width": 1280, "height": 860})
        page = context.new_page()
        problems = []
        page.on("console", lambda m: m.type == "error" and "401" not in m.text and problems.append(m.text))
        page.on("pageerror", lambda e: problems.append(str(e)))
        expect.set_options(timeout=60_000)

        # Sign in: a wrong password is refused in words, the right one opens the Node page.
        page.goto(alpha.base + "/_utils/")
        expect(page.locator("#login-form")).to_be_visible()
        check_labels(page, "sign-in")
        shoot(page, "0-sign-in")
        page.fill("#login-name", user)
        page.fill("#login-password", "wrong")
        page.click("#login-form button[type=submit]")
        expect(page.locator("#login-error")).not_to_be_empty()
        page.fill("#login-password", password)
        page.click("#login-form button[type=submit]")
        expect(page.locator("#app")).to_be_visible()

        # Node: identity, pairing invitation and its QR code (an SVG the node drew); never a password.
        expect(page.locator("#node-name")).to_have_text("alpha")
        expect(page.locator("#node-uuid")).to_have_text(alpha.uuid)
        expect(page.locator("#node-pairing-url")).to_contain_text(alpha.uuid)
        expect(page.locator("#node-pairing-url")).to_contain_text("invite=")
        assert password not in page.content(), "the Node page shows a password"
        # Polled from here: wait_for_function polls inside the page with eval, which the CSP refuses.
        eventually("the node's QR code is drawn", lambda: page.locator("#node-qr").evaluate("e => e.naturalWidth") > 100)
        shoot(page, "1-node")

        # Peers: beta redeemed alpha's invitation (--pair), so alpha syncs with it too, trusted with
        # the invitation's scope; pairing alpha with beta's URL in the form makes it mutual both ways.
        page.click("a[href='#/peers']")
        check_labels(page, "peers")
        row = page.locator(f"tr[data-peer-uuid='{beta.uuid}']")
        expect(row).to_be_visible()
        expect(row).to_contain_text("write to every keyspace")
        expect(row).to_contain_text("invitation ")
        page.fill("#pair-url", beta.pairing_url)
        page.click("#pair-form button[type=submit]")
        expect(page.locator("#pair-status")).to_contain_text("Paired")
        expect(row).to_contain_text("beta")  # the name its welcome gives (the URL names an address)
        expect(row).to_contain_text("trusted")
        expect(row.locator("button[data-action=untrust]")).to_be_visible()
        # Measured, not the replicator's activity: nothing pending either way and equal digests.
        expect(row).to_contain_text("default: in sync", timeout=30000)
        shoot(page, "2-peers")

        # Invite a device: a QR code and URL with a countdown, listed as pending, then revoked.
        page.select_option("#invite-access", "read")
        page.fill("#invite-keyspaces", "default")
        page.click("#invite-form button[type=submit]")
        expect(page.locator("#invite-qr")).to_be_visible()
        eventually("the invitation's QR code is drawn", lambda: page.locator("#invite-qr").evaluate("e => e.naturalWidth") > 100)
        expect(page.locator("#invite-url")).to_contain_text("invite=")
        expect(page.locator("#invite-made .countdown")).to_have_text(__import__("re").compile(r"^1[45]:\d\d$"))
        invitation = page.locator("#invitations-table tr[data-invitation-id]").filter(has_text="read to default")
        expect(invitation).to_have_count(1)
        shoot(page, "2b-invite")
        invitation.locator("button").click()
        expect(invitation).to_have_count(0)
        status, listed = alpha.call("GET", "/_node/invitations")
        assert status == 200 and any(i["revoked"] and i["keyspaces"] == ["default"] for i in listed), listed

        # A document edited in the dashboard arrives on the other node.
        page.goto(alpha.base + "/_utils/#/doc/default/note")
        expect(page.locator("#doc-editor")).to_have_value(__import__("re").compile("written by the API"))
        document = json.loads(page.input_value("#doc-editor"))
        document["text"] = "edited in the browser"
        page.fill("#doc-editor", json.dumps(document, indent=2))
        page.click("#doc-save")
        expect(page.locator("#doc-status")).to_contain_text("Saved revision 2-")
        shoot(page, "3-document")
        eventually("the edit reaches beta", lambda: beta.call("GET", "/default/note")[1].get("text") == "edited in the browser")

        # A conflict (two leaves written as a replicator would), seen and resolved.
        leaves = [{"_id": "clash", "_rev": "1-00000000000000000000000000000001", "side": "kept"},
                  {"_id": "clash", "_rev": "1-00000000000000000000000000000002", "side": "dropped"}]
        assert alpha.call("POST", "/default/_bulk_docs", {"docs": leaves, "new_edits": False})[0] == 201
        page.goto(alpha.base + "/_utils/#/databases/default")
        expect(page.locator("#documents-table tr[data-doc-id='note']")).to_be_visible()
        expect(page.locator("#conflicts")).to_contain_text("clash")
        shoot(page, "4-collection")
        page.goto(alpha.base + "/_utils/#/doc/default/clash")
        expect(page.locator("#doc-conflicts button[data-keep-rev]")).to_have_count(2)
        shoot(page, "5-conflict")
        page.click("#doc-conflicts button[data-keep-rev='1-00000000000000000000000000000001']")
        expect(page.locator("#doc-status")).to_have_text("Conflict resolved")
        expect(page.locator("#doc-conflicts")).to_have_count(0)
        status, clash = alpha.call("GET", "/default/clash?conflicts=true")
        assert status == 200 and clash["side"] == "kept" and "_conflicts" not in clash, clash

        # A SQL++ query with its results in a table.
        page.click("a[href='#/query']")
        page.select_option("#query-db", "default")
        page.fill("#query-text", "SELECT meta().id AS id, text FROM _ WHERE text IS VALUED ORDER BY meta().id")
        page.click("#query-run")
        expect(page.locator("#query-results")).to_contain_text("edited in the browser")
        expect(page.locator("#query-status")).to_contain_text("1 rows")
        check_labels(page, "query")
        shoot(page, "6-query")

        # Databases: sizes and counts.
        page.click("a[href='#/databases']")
        expect(page.locator("#databases-list tr[data-keyspace='default']")).to_contain_text("2")
        shoot(page, "7-databases")

        # Replications: alpha's pull from beta is running.
        page.click("a[href='#/replications']")
        expect(page.locator("#tasks-table")).to_contain_text("127.0.0.1")
        shoot(page, "8-replications")

        # Metrics: writes per second and lag, drawn live.
        page.click("a[href='#/metrics']")
        expect(page.locator("#metric-writes-rate")).not_to_be_empty()
        expect(page.locator("#metric-lag")).not_to_be_empty()
        page.wait_for_timeout(4500)  # a few samples for the chart
        shoot(page, "9-metrics")

        # Keyboard: the skip link is the first stop and leads to the page.
        page.keyboard.press("Tab")
        assert page.evaluate("document.activeElement.id") == "skip-link", page.evaluate("document.activeElement.outerHTML")

        browser.close()
    assert not problems, problems
    print("dashboard: ok", sorted(os.listdir(shots)))
finally:
    beta.stop()
    alpha.stop()
