"""Hostile input against a running `syncnode serve` over HTTPS, as an attacker would send it.

    hostile_input.py BASE_URL USER PASSWORD CERT_PEM PID [--requests N] [--seed S]
                     [--idle-timeout SECONDS] [--rss-limit-mb MB]

Raw TLS sockets, no HTTP library: the requests are meant to be wrong. Generated requests (seeded; the
seed is printed so a failure can be replayed with --seed) fall into these categories: random bodies,
wrong JSON shapes, bad revisions and `since`, path tricks, invalid UTF-8, chunked and Content-Length
abuse, methods, and slow clients. It fails (exit 1, one line per problem) when:
- any answer is a 5xx (501 is allowed for a Transfer-Encoding the node does not implement, 502 for a
  `_replicate` whose peer is unreachable);
- an error answer lacks a JSON body with "error" and "reason", or its framing is wrong;
- any answer takes longer than the idle timeout plus a margin, or a slow client is not cut off (one
  that stops sending at any stage, or one that asks for an 8 MB answer and reads none of it);
- the node's RSS after the campaign exceeds the limit;
- the reference documents (written before, read back after with revisions, conflicts and
  attachments) changed, or the node stopped answering;
- a `_replicate` toward a tarpit (a peer that accepts connections and never answers) does not
  answer 502 naming it within its connection_timeout and retries, or stays in _active_tasks once
  its asker left; or one from a peer whose attachment streams on without a length is not refused
  at the node's attachment limit (serve's --max-attachment-mb, which must be 4).
"""
import argparse, base64, gzip, json, os, random, socket, ssl, string, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote, urlsplit

REF_DB, SCRATCH_DB, BIG_DB = "hostile-ref", "hostile-scratch", "hostile-big"
BIG_DOCS, BIG_SIZE = 8, 1 << 20


class Closed(Exception):
    """The node closed the connection (an allowed answer to broken framing)."""


class Hung(Exception):
    pass


class Connection:
    def __init__(self, host, port, context, timeout):
        raw = socket.create_connection((host, port), timeout=timeout)
        self.sock = context.wrap_socket(raw, server_hostname="localhost")
        self.buffer = b""

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, data):
        try:
            self.sock.sendall(data)
        except (OSError, ssl.SSLError) as error:
            raise Closed(str(error))

    def _fill(self):
        try:
            chunk = self.sock.recv(65536)
        except socket.timeout:
            raise Hung("no bytes within the timeout")
        except (OSError, ssl.SSLError) as error:
            raise Closed(str(error))
        if not chunk:
            raise Closed("end of stream")
        self.buffer += chunk

    def _line(self, limit=65536):
        while b"\r\n" not in self.buffer:
            if len(self.buffer) > limit:
                raise ValueError("header line too long")
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _exactly(self, n):
        while len(self.buffer) < n:
            self._fill()
        data, self.buffer = self.buffer[:n], self.buffer[n:]
        return data

    def response(self, head_request=False):
        """(status, headers, body, closes): a whole response, framed as its headers say."""
        status_line = self._line()
        parts = status_line.split(b" ", 2)
        if len(parts) < 2 or not parts[0].startswith(b"HTTP/1."):
            raise ValueError(f"bad status line {status_line[:80]!r}")
        status = int(parts[1])
        headers = {}
        while True:
            line = self._line()
            if not line:
                break
            name, _, value = line.partition(b":")
            headers.setdefault(name.strip().lower().decode("latin-1"), value.strip().decode("latin-1"))
        closes = headers.get("connection", "").lower() == "close"
        if head_request or status in (204, 304) or 100 <= status < 200:
            return status, headers, b"", closes
        if headers.get("transfer-encoding", "").lower() == "chunked":
            body = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    return status, headers, body, closes
                body += self._exactly(size)
                if self._exactly(2) != b"\r\n":
                    raise ValueError("chunk not followed by CRLF")
        if "content-length" in headers:
            return status, headers, self._exactly(int(headers["content-length"])), closes
        if not closes:
            raise ValueError(f"{status} with neither a length, chunks nor Connection: close")
        body = self.buffer
        try:
            while True:
                self._fill()
        except Closed:
            pass
        return status, headers, body, True


class EndlessAttachmentPeer(BaseHTTPRequestHandler):
    """A CouchDB-shaped peer with one document whose attachment stub has no length, and whose
    attachment streams zeros without end (chunked)."""
    DOC = {"_id": "endless", "_rev": "1-0123456789abcdef0123456789abcdef", "_revisions": {"start": 1, "ids": ["0123456789abcdef0123456789abcdef"]},
           "_attachments": {"a.bin": {"stub": True, "content_type": "application/octet-stream", "digest": "md5-AAAAAAAAAAAAAAAAAAAAAA==", "revpos": 1}}}

    def log_message(self, *args):
        pass

    def answer(self, status, value):
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = urlsplit(self.path).path
        if path == "/":
            self.answer(200, {"couchdb": "Welcome", "uuid": "e0d1e55a77ac4e1ba5ec0ffee0000001", "version": "3.3.3"})
        elif path == "/db":
            self.answer(200, {"db_name": "db", "update_seq": "1", "doc_count": 1, "instance_start_time": "0"})
        elif path == "/db/_changes":
            self.answer(200, {"results": [{"seq": "1", "id": "endless", "changes": [{"rev": self.DOC["_rev"]}]}], "last_seq": "1", "pending": 0})
        elif path == "/db/endless/a.bin":
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            chunk = b"%x\r\n" % (1 << 20) + b"\0" * (1 << 20) + b"\r\n"
            try:
                for _ in range(1 << 12):  # 4 GiB at most: far past any limit a test sets
                    self.wfile.write(chunk)
            except OSError:
                pass
        elif path.startswith("/db/_local/"):
            self.answer(404, {"error": "not_found", "reason": "missing"})
        elif path == "/db/endless":
            self.answer(200, [{"ok": self.DOC}])
        else:
            self.answer(404, {"error": "not_found", "reason": path})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        path = urlsplit(self.path).path
        if path == "/db/_changes":
            self.do_GET()
        elif path == "/db/_bulk_get":
            self.answer(200, {"results": [{"id": "endless", "docs": [{"ok": self.DOC}]}]})
        elif path == "/db/_revs_diff":
            self.answer(200, {})
        else:
            self.answer(404, {"error": "not_found", "reason": path})

    def do_PUT(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        self.answer(201, {"ok": True})


class Campaign:
    def __init__(self, args):
        url = urlsplit(args.base)
        self.host, self.port = url.hostname, url.port
        self.args = args
        self.auth = "Basic " + base64.b64encode(f"{args.user}:{args.password}".encode()).decode()
        self.context = ssl.create_default_context(cafile=args.cert)
        self.hang = args.idle_timeout + 10
        self.random = random.Random(args.seed)
        self.problems = []
        self.counts = {}
        self.statuses = {}
        self.seconds = {}
        self.connection = None

    # -- plumbing

    def problem(self, category, request, text):
        if len(self.problems) < 40:
            self.problems.append(f"[{category}] {text}; request {request[:160]!r}")
        else:
            self.problems.append("")

    def connect(self):
        return Connection(self.host, self.port, self.context, self.hang)

    def request(self, method, path, body=b"", headers=None, auth=True):
        """A well-framed request (the payload may still be hostile)."""
        lines = [f"{method} {path} HTTP/1.1", f"Host: localhost:{self.port}", f"Content-Length: {len(body)}"]
        if auth:
            lines.append(f"Authorization: {self.auth}")
        for name, value in (headers or {}).items():
            lines.append(f"{name}: {value}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    def exchange(self, raw, category, allowed_5xx=(), broken_framing=False, head=False):
        """Sends one request and checks its answer. Broken framing may be answered by a close."""
        self.counts[category] = self.counts.get(category, 0) + 1
        if self.connection is None:
            self.connection = self.connect()
        started = time.monotonic()
        try:
            self.connection.send(raw)
            status, headers, body, closes = self.connection.response(head_request=head)
        except Closed:
            self.connection.close()
            self.connection = None
            self.seconds[category] = self.seconds.get(category, 0) + time.monotonic() - started
            if os.environ.get("HOSTILE_DEBUG") and time.monotonic() - started > 1:
                print(f"slow close {time.monotonic() - started:.1f}s {raw[:200]!r}")
            if not broken_framing:
                self.problem(category, raw, "connection closed without an answer")
            return None
        except Hung:
            self.connection.close()
            self.connection = None
            self.problem(category, raw, f"no answer within {self.hang} s")
            return None
        except ValueError as error:
            self.connection.close()
            self.connection = None
            self.problem(category, raw, f"malformed answer: {error}")
            return None
        elapsed = time.monotonic() - started
        self.seconds[category] = self.seconds.get(category, 0) + elapsed
        self.statuses[status] = self.statuses.get(status, 0) + 1
        if elapsed > self.hang:
            self.problem(category, raw, f"answer took {elapsed:.1f} s")
        if status >= 500 and status not in allowed_5xx:
            self.problem(category, raw, f"status {status}: {body[:200]!r}")
        if status >= 400 and not head:
            try:
                error = json.loads(body)
                if not isinstance(error.get("error"), str) or not isinstance(error.get("reason"), str):
                    raise ValueError
            except ValueError:
                self.problem(category, raw, f"status {status} without a JSON error body: {body[:120]!r}")
        if closes or broken_framing:
            self.connection.close()
            self.connection = None
        return status, headers, body

    def json_call(self, method, path, value=None):
        body = b"" if value is None else json.dumps(value).encode()
        answer = self.exchange(self.request(method, path, body, {"Content-Type": "application/json"}), "setup")
        if answer is None:
            raise SystemExit(f"setup request {method} {path} got no answer")
        status, _, data = answer
        return status, (json.loads(data) if data else None)

    # -- reference documents

    def write_references(self):
        for db in (REF_DB, SCRATCH_DB):
            self.json_call("PUT", f"/{db}")
        docs = [{"_id": f"ref-{i}", "n": i, "text": "référence ✓ " * (i % 5), "list": list(range(i % 7))}
                for i in range(30)]
        status, _ = self.json_call("POST", f"/{REF_DB}/_bulk_docs", {"docs": docs})
        assert status == 201, status
        status, body = self.json_call("GET", f"/{REF_DB}/ref-0")
        payload = base64.b64encode(bytes(range(256)) * 40).decode()
        status, _ = self.json_call("PUT", f"/{REF_DB}/ref-0", dict(body, _attachments={
            "blob.bin": {"content_type": "application/octet-stream", "data": payload}}))
        assert status == 201, status
        # A conflict, as a replicator would write it.
        status, _ = self.json_call("POST", f"/{REF_DB}/_bulk_docs", {"new_edits": False, "docs": [
            {"_id": "ref-1", "_rev": "2-" + "a" * 32, "_revisions": {"start": 2, "ids": ["a" * 32, "b" * 32]}, "side": "A"}]})
        assert status == 201, status
        # Big answers, for a client that asks for one and reads none of it.
        self.json_call("PUT", f"/{BIG_DB}")
        status, _ = self.json_call("POST", f"/{BIG_DB}/_bulk_docs", {"docs": [
            {"_id": f"big-{i}", "text": string.ascii_letters[i] * BIG_SIZE} for i in range(BIG_DOCS)]})
        assert status == 201, status

    def snapshot(self):
        status, all_docs = self.json_call("GET", f"/{REF_DB}/_all_docs")
        assert status == 200, status
        docs = {}
        for row in all_docs["rows"]:
            path = f"/{REF_DB}/{quote(row['id'], safe='')}?revs=true&conflicts=true&attachments=true"
            docs[row["id"]] = self.json_call("GET", path)
        _, info = self.json_call("GET", f"/{REF_DB}")
        return docs, info.get("doc_count"), info.get("update_seq")

    # -- generators: each returns (raw request, category, allowed 5xx, broken framing, HEAD)

    def pick(self, values):
        return self.random.choice(values)

    def random_bytes(self):
        r = self.random
        size = self.pick([0, 1, 7, 64, 300, 4096, 65536]) if r.random() > 0.01 else r.choice([1 << 20, 4 << 20])
        return bytes(r.getrandbits(8) for _ in range(min(size, 4096))) * max(1, size // 4096)

    def write_target(self):
        return self.pick([f"/{SCRATCH_DB}", f"/{SCRATCH_DB}/doc", f"/{SCRATCH_DB}/_bulk_docs", f"/{SCRATCH_DB}/_bulk_get",
                          f"/{SCRATCH_DB}/_revs_diff", f"/{SCRATCH_DB}/_all_docs", f"/{SCRATCH_DB}/_find",
                          f"/{SCRATCH_DB}/_index", f"/{SCRATCH_DB}/_changes", f"/{SCRATCH_DB}/_local/x",
                          f"/{SCRATCH_DB}/doc/att.bin", "/_session", "/_replicate", f"/{REF_DB}/_bulk_docs",
                          f"/{REF_DB}/ref-2", f"/{REF_DB}/_revs_diff", f"/{SCRATCH_DB}/_ensure_full_commit"])

    def gen_random_body(self):
        body = self.random_bytes()
        if body[:1] in (b"{", b"[", b'"') or body[:1].isdigit():
            body = b"\x00" + body  # never a valid JSON document by accident
        ctype = self.pick(["application/json", "application/octet-stream", "multipart/related; boundary=x",
                           "application/x-www-form-urlencoded", "text/plain"])
        method = self.pick(["POST", "PUT"])
        return self.request(method, self.write_target(), body, {"Content-Type": ctype}), "random-body", (), False, False

    WEIRD = [None, True, 0, -1, 1e308, 10 ** 30, "", "x", "\u0000", "_design/x", [], [None], {}, {"a": []},
             "1-", "0-x", "a" * 5000, [[[[[]]]]], {"$gt": None}, "\ud7ff", "é" * 100]

    def weird(self, depth=0):
        r = self.random
        if depth < 2 and r.random() < 0.3:
            return {self.pick(["_id", "_rev", "_deleted", "_attachments", "_revisions", "a", "docs", "keys"]): self.weird(depth + 1)
                    for _ in range(r.randint(0, 3))}
        if depth < 2 and r.random() < 0.2:
            return [self.weird(depth + 1) for _ in range(r.randint(0, 3))]
        return self.pick(self.WEIRD)

    def gen_wrong_shape(self):
        r = self.random
        templates = [
            (f"/{SCRATCH_DB}/_bulk_docs", {"docs": [{"_id": "a", "v": 1}], "new_edits": True}),
            (f"/{SCRATCH_DB}/_bulk_get", {"docs": [{"id": "a", "rev": "1-" + "0" * 32}]}),
            (f"/{SCRATCH_DB}/_revs_diff", {"a": ["1-" + "0" * 32]}),
            (f"/{SCRATCH_DB}/_all_docs", {"keys": ["a", "b"]}),
            (f"/{SCRATCH_DB}/_find", {"selector": {"v": {"$gt": 0}}, "limit": 5, "sort": ["v"], "fields": ["v"]}),
            (f"/{SCRATCH_DB}/_index", {"index": {"fields": ["v"]}, "name": "i", "type": "json"}),
            (f"/{SCRATCH_DB}/doc-{r.randint(0, 20)}", {"v": 1, "_attachments": {"f": {"content_type": "text/plain", "data": "aGk="}}}),
            (f"/{SCRATCH_DB}/_local/cp", {"history": [], "session_id": "s"}),
            (f"/{SCRATCH_DB}/_changes", {"doc_ids": ["a"]}),
            ("/_replicate", {"source": SCRATCH_DB, "target": "https://127.0.0.1:1/x", "continuous": False}),
            ("/_session", {"name": self.args.user, "password": "wrong"}),
            (f"/{REF_DB}/_revs_diff", {"ref-1": ["2-" + "a" * 32]}),
            (f"/{REF_DB}/_bulk_get", {"docs": [{"id": "ref-0"}]}),
        ]
        path, value = self.pick(templates)
        # Replace one field (or the whole value) with something of the wrong shape.
        if r.random() < 0.15:
            value = self.weird()
        else:
            value = json.loads(json.dumps(value))
            target = value
            while isinstance(target, (dict, list)) and target and r.random() < 0.6:
                key = r.choice(list(target.keys())) if isinstance(target, dict) else r.randrange(len(target))
                if not isinstance(target[key], (dict, list)) or not target[key]:
                    break
                target = target[key]
            if isinstance(target, dict) and target:
                target[r.choice(list(target.keys()))] = self.weird()
            elif isinstance(target, list) and target:
                target[r.randrange(len(target))] = self.weird()
        body = json.dumps(value, allow_nan=True).encode()
        if r.random() < 0.02:  # deep nesting, or a long array of them
            body = b'{"deep":' + b"[" * 5000 + b"]" * 5000 + b"}" if r.random() < 0.5 else b"[" + b",".join([body] * 20000) + b"]"
        if "/_replicate" in path and isinstance(value, dict) and isinstance(value.get("target"), str) \
                and not value["target"].startswith("https://127.0.0.1:1/"):
            value["target"] = "https://127.0.0.1:1/x"  # never replicate anywhere reachable
            body = json.dumps(value).encode()
        method = "PUT" if f"/{SCRATCH_DB}/doc-" in path or "/_local/" in path else "POST"
        if path.startswith(f"/{REF_DB}") and method != "POST":
            path = f"/{SCRATCH_DB}/x"
        # An unreachable peer is a 502 naming the peer's error.
        allowed = (502,) if path == "/_replicate" else ()
        return self.request(method, path, body, {"Content-Type": "application/json"}), "wrong-shape", allowed, False, False

    BAD_REVS = ["", "-1", "x", "1-", "0-abc", "99999999999999999999-1", "1-" + "f" * 300, "NaN", "now", "1e5",
                "%00", "%ff", "1-%ZZ", "3-" + "a" * 32, "[", '["1-x"]', "all", '"', "-0", "+1", "0x10", " 1"]

    def gen_bad_revision(self):
        r = self.random
        bad = self.pick(self.BAD_REVS)
        db = self.pick([REF_DB, SCRATCH_DB])
        doc = f"ref-{r.randint(0, 3)}" if db == REF_DB else "doc-1"
        choice = r.randrange(8)
        if choice == 0:
            return self.request("GET", f"/{db}/{doc}?rev={bad}"), "bad-revision", (), False, False
        if choice == 1:
            return self.request("GET", f"/{db}/{doc}?open_revs={bad}&revs={self.pick(['true', bad])}&atts_since={bad}"), "bad-revision", (), False, False
        if choice == 2:
            params = {"since": bad, "limit": self.pick(["1", "-1", "x", "0", bad]), "feed": self.pick(["normal", "longpoll", "continuous", "eventsource", "x", bad]),
                      "heartbeat": self.pick(["x", "-5", "true"]), "style": self.pick(["all_docs", "main_only", bad]),
                      "descending": self.pick(["true", "false", bad])}
            query = "&".join(f"{k}={v}" for k, v in params.items() if r.random() < 0.7)
            return self.request("GET", f"/{db}/_changes?{query}&timeout=100"), "bad-since", (), False, False
        if choice == 3:
            return self.request("DELETE", f"/{SCRATCH_DB}/doc-1?rev={bad}"), "bad-revision", (), False, False
        if choice == 4:
            body = json.dumps({"new_edits": False, "docs": [{"_id": "nr", "_rev": bad, "_revisions": self.pick([{"start": -1, "ids": []}, {"start": 1, "ids": [bad]}, bad])}]})
            return self.request("POST", f"/{SCRATCH_DB}/_bulk_docs", body.encode(), {"Content-Type": "application/json"}), "bad-revision", (), False, False
        if choice == 5:
            # Never `new_edits=false` on the reference database: a well-formed revision would be a legal write.
            body = json.dumps({"v": 1, "_rev": bad}).encode()
            path = f"/{SCRATCH_DB}/doc-1?new_edits=false" if db == SCRATCH_DB else f"/{REF_DB}/{doc}?rev={bad}x"
            return self.request("PUT", path, body, {"Content-Type": "application/json"}), "bad-revision", (), False, False
        if choice == 6:
            body = json.dumps({"_id": "_local/cp", "_rev": bad, "h": 1}).encode()
            return self.request("PUT", f"/{SCRATCH_DB}/_local/cp", body, {"Content-Type": "application/json"}), "bad-revision", (), False, False
        return self.request("GET", f"/{db}/_all_docs?startkey={bad}&limit={bad}&skip={bad}&keys={bad}"), "bad-revision", (), False, False

    PATHS = ["/..", "/%2e%2e/", "//", f"/{SCRATCH_DB}//x", f"/{SCRATCH_DB}/%00", f"/{SCRATCH_DB}/_design/../x",
             "/../etc/passwd", f"/{SCRATCH_DB}/a%2fb", "/_all_dbs/../", "/_users", f"/{SCRATCH_DB}/_local/",
             f"/{SCRATCH_DB}/_local/%00", "/%zz", "/%", f"/{SCRATCH_DB}?a=%ff", f"/{SCRATCH_DB}#frag",
             f"/{SCRATCH_DB}/doc/att/../../x", "http://evil.example/x", "*", "/x..", "/A", "/-", "/_x", "/a$b",
             f"/{REF_DB}/../{SCRATCH_DB}", f"/{SCRATCH_DB}/_design/", "/" + "a" * 300, f"/{SCRATCH_DB}/" + "d" * 9000,
             f"/{SCRATCH_DB}.s.c/x", f"/{SCRATCH_DB}.s/x", f"/{SCRATCH_DB}.../x", "/_uuids?count=100000000",
             "/_uuids?count=-1", f"/{SCRATCH_DB}/_all_docs?keys=[" + '"a",' * 2000 + '"a"]', "/\\..\\x", "/%c0%ae%c0%ae/"]

    def gen_path(self):
        path = self.pick(self.PATHS)
        method = self.pick(["GET", "PUT", "DELETE", "POST", "HEAD", "COPY"])
        if method == "PUT" and self.random.random() < 0.5:
            body = b'{"v": 1}'
        else:
            body = b""
        return self.request(method, path, body, {"Content-Type": "application/json"}), "path", (), False, method == "HEAD"

    INVALID_UTF8 = [b"\xed\xa0\x80", b"\xff", b"\xc0\xaf", b"\xe2\x82", b"\xf4\x90\x80\x80", b"\x80", b"a\xfeb",
                    b"\xf0\x9f\x98", b"\xc3"]

    def gen_invalid_utf8(self):
        r = self.random
        bad = self.pick(self.INVALID_UTF8)
        choice = r.randrange(5)
        if choice == 0:
            body = b'{"a":"' + bad + b'"}'
        elif choice == 1:
            body = b'{"' + bad + b'":1}'
        elif choice == 2:
            body = b'{"docs":[{"_id":"u' + bad + b'","v":"' + bad + b'"}]}'
            return self.request("POST", f"/{self.pick([SCRATCH_DB, REF_DB])}/_bulk_docs", body, {"Content-Type": "application/json"}), "invalid-utf8", (), False, False
        elif choice == 3:
            escaped = "".join(f"%{b:02X}" for b in bad)
            return self.request(self.pick(["PUT", "GET"]), f"/{SCRATCH_DB}/id{escaped}", b'{"v":1}', {"Content-Type": "application/json"}), "invalid-utf8", (), False, False
        else:
            raw = self.request("PUT", f"/{SCRATCH_DB}/u", b'{"v":1}', {"Content-Type": "application/json"}, auth=False)
            user = base64.b64encode(b"us" + bad + b":pw").decode()
            raw = raw.replace(b"Host:", f"Authorization: Basic {user}\r\nHost:".encode(), 1)
            return raw, "invalid-utf8", (), False, False
        path = self.pick([f"/{SCRATCH_DB}/utf", f"/{REF_DB}/ref-3", f"/{SCRATCH_DB}/_local/utf"])
        return self.request("PUT", path, body, {"Content-Type": "application/json"}), "invalid-utf8", (), False, False

    def gen_framing(self):
        r = self.random
        base = f"PUT /{SCRATCH_DB}/framed-{r.randint(0, 50)} HTTP/1.1\r\nHost: x\r\nAuthorization: {self.auth}\r\nContent-Type: application/json\r\n"
        body = b'{"v":1}'
        cases = [
            (base + "Content-Length: 3\r\n\r\n").encode() + body,                        # longer than declared
            (base + "Content-Length: -1\r\n\r\n").encode() + body,
            (base + "Content-Length: x\r\n\r\n").encode() + body,
            (base + "Content-Length: 7\r\nContent-Length: 8\r\n\r\n").encode() + body,
            (base + "Content-Length: 99999999999999999999\r\n\r\n").encode() + body,
            (base + "Content-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n").encode() + body + b"\r\n0\r\n\r\n",
            (base + "Transfer-Encoding: gzip, chunked\r\n\r\n7\r\n").encode() + body + b"\r\n0\r\n\r\n",
            (base + "Transfer-Encoding: identity\r\nContent-Length: 7\r\n\r\n").encode() + body,
            (base + "Transfer-Encoding: chunked\r\n\r\nzz\r\n").encode() + body + b"\r\n0\r\n\r\n",
            (base + "Transfer-Encoding: chunked\r\n\r\n7;ext=1\r\n").encode() + body + b"\r\n0\r\n\r\n",
            (base + "Transfer-Encoding: chunked\r\n\r\n3\r\n").encode() + body + b"\r\n0\r\n\r\n",  # chunk longer than its size
            (base + "Transfer-Encoding: chunked, chunked\r\n\r\n7\r\n").encode() + body + b"\r\n0\r\n\r\n",
            (base + "Transfer-Encoding: xchunked\r\n\r\n").encode() + body,
            (base + "NoColonHeader\r\nContent-Length: 7\r\n\r\n").encode() + body,
            (base + " folded: value\r\nContent-Length: 7\r\n\r\n").encode() + body,
            (base + "Bad Name: v\r\nContent-Length: 7\r\n\r\n").encode() + body,
            (base + "".join(f"X-H{i}: v\r\n" for i in range(3000)) + "Content-Length: 7\r\n\r\n").encode() + body,
            (base + "X-Big: " + "v" * 200_000 + "\r\nContent-Length: 7\r\n\r\n").encode() + body,
            f"GET / HTTP/1.0\r\nAuthorization: {self.auth}\r\n\r\n".encode(),
            f"GET / HTTP/2.0\r\nAuthorization: {self.auth}\r\n\r\n".encode(),
            f"GET / HTTP/9.9\r\nHost: x\r\n\r\n".encode(),
            b"GARBAGE\r\n\r\n",
            f"GET /\nHost: x\nAuthorization: {self.auth}\n\n".encode(),
            b"\x16\x03\x01\x00\x05hello\r\n\r\n",
            f"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Basic !!!\r\n\r\n".encode(),
            f"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer x\r\n\r\n".encode(),
            f"GET / HTTP/1.1\r\nHost: x\r\nAuthorization: {self.auth}\r\nExpect: 100-continue\r\n\r\n".encode(),
        ]
        raw = self.pick(cases)
        return raw, "framing", (501, 505), True, False

    METHODS = ["CONNECT", "TRACE", "OPTIONS", "PATCH", "PROPFIND", "FOO", "get", "G" * 500, "GE T", "MOVE", "COPY",
               "LOCK", "PURGE", "SEARCH", "HEAD", "DELETE"]

    def gen_encoding(self):
        """Bodies in content codings: gzip (decoded, bounded), others (415), broken gzip (400)."""
        doc = json.dumps({"v": self.random.randint(0, 9)}).encode()
        target = f"/{SCRATCH_DB}/enc-{self.random.randint(0, 50)}"
        choice = self.random.randrange(8)
        if choice == 0:
            raw = self.request("PUT", target, gzip.compress(doc), {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        elif choice == 1:
            raw = self.request("POST", f"/{SCRATCH_DB}", self.bomb(), {"Content-Type": "application/json", "Content-Encoding": "gzip"})
        elif choice == 2:
            raw = self.request("PUT", target, doc, {"Content-Type": "application/json", "Content-Encoding": self.pick(["br", "deflate", "compress", "gzip, br"])})
        elif choice == 3:
            raw = self.request("PUT", f"{target}/a.txt", gzip.compress(self.random_bytes()),
                               {"Content-Type": "text/plain", "Content-Encoding": "gzip"})
        elif choice == 4:
            raw = self.request("PUT", f"{target}/bomb.bin", gzip.compress(b"\0" * (2 << 20), 9),
                               {"Content-Type": "application/octet-stream", "Content-Encoding": "gzip"})
        elif choice == 5:
            data = gzip.compress(self.random_bytes())
            raw = self.request("PUT", f"{target}/cut.txt", data[:self.random.randint(0, len(data) - 1)] + (b"junk" if self.random.random() < 0.5 else b""),
                               {"Content-Type": "text/plain", "Content-Encoding": "gzip"})
        elif choice == 6:
            raw = self.request("PUT", f"{target}/m.txt", b"hello", {"Content-Type": "text/plain", "Content-MD5": self.pick(
                ["XUFAKrxLKna5cZ2REBfFkg==", "AAAAAAAAAAAAAAAAAAAAAA==", "not base64!", "", "aGVsbG8="])})
        else:
            raw = self.request("PUT", f"{target}/b.txt", b"hello", {"Content-Type": "text/plain", "Content-Encoding": "br"})
        return raw, "encoding", (), False, False

    def bomb(self):
        """80 MB of spaces (past the 64 MiB body limit) in about 80 KB of gzip, made once."""
        if not hasattr(self, "_bomb"):
            self._bomb = gzip.compress(b" " * (80 << 20), 1)
        return self._bomb

    def check_encodings(self):
        """Exact answers for what the hostile campaign only checks for shape."""
        def put(path, body, headers):
            answer = self.exchange(self.request("PUT", path, body, headers), "encoding-check")
            return answer[0] if answer else None, (json.loads(answer[2]) if answer and answer[2] else None)
        def expect(what, got, status, error=None):
            if got[0] != status or (error and (got[1] or {}).get("error") != error):
                self.problems.append(f"[encoding] {what}: expected {status} {error or ''}, got {got}")
        db = SCRATCH_DB
        expect("gzip JSON body", put(f"/{db}/gz", gzip.compress(b'{"text":"zipped"}'), {"Content-Type": "application/json", "Content-Encoding": "gzip"}), 201)
        answer = self.exchange(self.request("GET", f"/{db}/gz"), "encoding-check")
        if not answer or json.loads(answer[2]).get("text") != "zipped":
            self.problems.append(f"[encoding] a gzip JSON body was not stored decoded: {answer}")
        expect("br JSON body", put(f"/{db}/br", b'{"a":1}', {"Content-Type": "application/json", "Content-Encoding": "br"}), 415)
        expect("gzip bomb JSON body", put(f"/{db}/bomb", self.bomb(), {"Content-Type": "application/json", "Content-Encoding": "gzip"}), 413)
        rev = put(f"/{db}/att", b"{}", {"Content-Type": "application/json"})[1]["rev"]
        got = put(f"/{db}/att/g.txt?rev={rev}", gzip.compress(b"hello world"), {"Content-Type": "text/plain", "Content-Encoding": "gzip"})
        expect("gzip attachment", got, 201)
        answer = self.exchange(self.request("GET", f"/{db}/att/g.txt"), "encoding-check")
        if not answer or answer[2] != b"hello world" or "content-encoding" in answer[1]:
            self.problems.append(f"[encoding] a gzip attachment was not stored and served decoded: {answer and answer[:1] + answer[2:]}")
        doc = json.loads(self.exchange(self.request("GET", f"/{db}/att"), "encoding-check")[2])
        if doc["_attachments"]["g.txt"].get("length") != 11:
            self.problems.append(f"[encoding] the stub of a gzip attachment says {doc['_attachments']['g.txt']}")
        rev = doc["_rev"]
        expect("br attachment", put(f"/{db}/att/b.txt?rev={rev}", b"hello", {"Content-Type": "text/plain", "Content-Encoding": "br"}), 415)
        expect("wrong Content-MD5", put(f"/{db}/att/m.txt?rev={rev}", b"hello", {"Content-Type": "text/plain", "Content-MD5": "AAAAAAAAAAAAAAAAAAAAAA=="}), 400, "content_md5_mismatch")
        expect("malformed Content-MD5", put(f"/{db}/att/m.txt?rev={rev}", b"hello", {"Content-Type": "text/plain", "Content-MD5": "not base64!"}), 400)
        expect("right Content-MD5", put(f"/{db}/att/m.txt?rev={rev}", b"hello", {"Content-Type": "text/plain", "Content-MD5": "XUFAKrxLKna5cZ2REBfFkg=="}), 201)

    def check_peers(self):
        """Peers that never answer, or never stop: _replicate answers, lets go, and refuses."""
        tarpit = socket.socket()
        tarpit.bind(("127.0.0.1", 0))
        tarpit.listen(64)
        port = tarpit.getsockname()[1]
        try:
            started = time.monotonic()
            body = json.dumps({"source": SCRATCH_DB, "target": f"http://127.0.0.1:{port}/db", "connection_timeout": 1000}).encode()
            answer = self.exchange(self.request("POST", "/_replicate", body, {"Content-Type": "application/json"}), "peers", allowed_5xx=(502,))
            took = time.monotonic() - started
            if not answer or answer[0] != 502 or f"127.0.0.1:{port}" not in answer[2].decode(errors="replace") or took > 30:
                self.problems.append(f"[peers] _replicate toward a tarpit: {answer and answer[0]} after {took:.1f} s: {answer and answer[2][:200]}")
            # The asker leaves after a second: the replication must go with it.
            leaving = self.connect()
            body = json.dumps({"source": SCRATCH_DB, "target": f"http://127.0.0.1:{port}/db", "connection_timeout": 600000}).encode()
            leaving.send(self.request("POST", "/_replicate", body, {"Content-Type": "application/json"}))
            time.sleep(1)
            leaving.close()
            deadline = time.monotonic() + 15
            while True:
                tasks = self.json_call("GET", "/_active_tasks")[1]
                if not any(str(port) in json.dumps(t) for t in tasks) or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if any(str(port) in json.dumps(t) for t in tasks):
                self.problems.append(f"[peers] a one-shot _replicate still runs 15 s after its asker left: {tasks}")
        finally:
            tarpit.close()
        server = ThreadingHTTPServer(("127.0.0.1", 0), EndlessAttachmentPeer)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            started = time.monotonic()
            source = f"http://127.0.0.1:{server.server_address[1]}/db"
            body = json.dumps({"source": source, "target": SCRATCH_DB, "connection_timeout": 5000}).encode()
            answer = self.exchange(self.request("POST", "/_replicate", body, {"Content-Type": "application/json"}), "peers", allowed_5xx=(502,))
            took = time.monotonic() - started
            text = answer[2].decode(errors="replace") if answer else ""
            if not answer or answer[0] != 502 or "bytes declared or allowed" not in text:
                self.problems.append(f"[peers] an endless attachment without a length: {answer and answer[0]} after {took:.1f} s: {text[:300]}")
            if self.json_call("GET", f"/{SCRATCH_DB}/endless")[0] != 404:
                self.problems.append("[peers] the document of an endless attachment was stored")
        finally:
            server.shutdown()
            server.server_close()

    def gen_method(self):
        method = self.pick(self.METHODS)
        path = self.pick(["/", "/_uuids", "/_all_dbs", f"/{SCRATCH_DB}", f"/{SCRATCH_DB}/doc-1", f"/{SCRATCH_DB}/_changes",
                          "/_session", f"/{SCRATCH_DB}/_bulk_docs", f"/{REF_DB}/ref-1/blob.bin", "/_replicate", f"/{SCRATCH_DB}/_local/x"])
        if method == "DELETE" and path.startswith(f"/{REF_DB}"):
            path = f"/{SCRATCH_DB}/x"
        # Methods the HTTP parser cannot read may be answered by a close.
        return self.request(method, path), "method", (), method not in ("OPTIONS", "PATCH", "HEAD", "DELETE", "COPY", "MOVE", "TRACE", "CONNECT", "PROPFIND", "LOCK", "PURGE", "SEARCH"), method == "HEAD"

    def gen_unauthenticated(self):
        path = self.pick(["/", f"/{REF_DB}", f"/{REF_DB}/ref-1", "/_all_dbs", f"/{REF_DB}/_changes", "/_session"])
        return self.request("GET", path, auth=False), "unauthenticated", (), False, False

    # -- slow clients

    def slow_clients(self, results):
        """Connections that stall at each stage; the node must close each within the idle timeout (plus a margin)."""
        deadline_after = self.args.idle_timeout + 8
        stages = {
            "no TLS ClientHello": lambda: socket.create_connection((self.host, self.port)),
            "half the headers": lambda: self._stalled(f"PUT /{SCRATCH_DB}/slow HTTP/1.1\r\nHost: x\r\n".encode()),
            "body stops": lambda: self._stalled(self.request("PUT", f"/{SCRATCH_DB}/slow", b"", {"Content-Type": "application/json"}).replace(b"Content-Length: 0", b"Content-Length: 100") + b'{"v":'),
            "a chunk far larger than sent": lambda: self._stalled(self.request("PUT", f"/{SCRATCH_DB}/slow", b"", {"Transfer-Encoding": "chunked"}).replace(b"Content-Length: 0\r\n", b"") + b"ffffffffffffffff\r\n{}"),
            "idle keep-alive": lambda: self._stalled(self.request("GET", "/"), read_answer=True),
            "one header byte per second": lambda: self._stalled(b"G", trickle=f"ET / HTTP/1.1\r\nHost: x\r\nX-Slow: {'v' * 200}".encode()),
        }
        threads = []
        for name, opener in stages.items():
            for _ in range(4):
                t = threading.Thread(target=self._watch_close, args=(name, opener, deadline_after, results))
                t.start()
                threads.append(t)
        for _ in range(4):
            t = threading.Thread(target=self._watch_unread, args=(deadline_after, results))
            t.start()
            threads.append(t)
        return threads

    def _watch_unread(self, deadline_after, results):
        """A client that asks for an answer of 8 MB and reads none of it: closed once its connection stays full."""
        raw = socket.socket()
        raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        raw.connect((self.host, self.port))
        sock = self.context.wrap_socket(raw, server_hostname="localhost")
        sock.sendall(self.request("GET", f"/{BIG_DB}/_all_docs?include_docs=true"))
        started = time.monotonic()
        time.sleep(deadline_after - 2)
        # What the buffers hold comes out, then the end, when the node has let go.
        sock.settimeout(2.0)
        received, closed = 0, False
        while time.monotonic() - started < deadline_after + 10:
            try:
                data = sock.recv(65536)
            except socket.timeout:
                break
            except (OSError, ssl.SSLError):
                closed = True
                break
            if not data:
                closed = True
                break
            received += len(data)
        sock.close()
        if received >= BIG_DOCS * BIG_SIZE:
            self.problems.append(f"[slow] a client reading nothing got the whole answer ({received} bytes): nothing was stalled")
        results.append(("reads none of a big answer", closed, time.monotonic() - started))

    def _stalled(self, data, read_answer=False, trickle=b""):
        raw = socket.create_connection((self.host, self.port))
        tls = self.context.wrap_socket(raw, server_hostname="localhost")
        tls.sendall(data)
        if read_answer:
            tls.settimeout(10)
            tls.recv(65536)
        tls.trickle = trickle
        return tls

    def _watch_close(self, name, opener, deadline_after, results):
        sock = opener()
        started = time.monotonic()
        trickle = getattr(sock, "trickle", b"")
        sock.settimeout(1.0)
        closed = False
        while time.monotonic() - started < deadline_after:
            try:
                if trickle:
                    sock.send(trickle[:1])
                    trickle = trickle[1:]
                data = sock.recv(65536)
                if not data:
                    closed = True
                    break
            except socket.timeout:
                continue
            except (OSError, ssl.SSLError):
                closed = True
                break
        elapsed = time.monotonic() - started
        sock.close()
        results.append((name, closed, elapsed))

    # -- the run

    def run(self):
        self.write_references()
        before = self.snapshot()
        rss_start = rss(self.args.pid)
        slow_results = []
        slow_threads = self.slow_clients(slow_results)
        self.check_encodings()
        self.check_peers()
        generators = [self.gen_random_body, self.gen_wrong_shape, self.gen_bad_revision, self.gen_path,
                      self.gen_invalid_utf8, self.gen_framing, self.gen_method, self.gen_unauthenticated, self.gen_encoding]
        weights = [14, 22, 18, 12, 12, 12, 7, 3, 4]
        started = time.monotonic()
        for _ in range(self.args.requests):
            raw, category, allowed, broken, head = self.random.choices(generators, weights)[0]()
            self.exchange(raw, category, allowed, broken, head)
        elapsed = time.monotonic() - started
        for t in slow_threads:
            t.join()
        for name, closed, seconds in slow_results:
            if not closed:
                self.problems.append(f"[slow] '{name}' connection still open after {seconds:.0f} s")
        if self.connection:
            self.connection.close()
            self.connection = None
        after = self.snapshot()
        if after != before:
            changed = [k for k in before[0] if before[0][k] != after[0].get(k)]
            self.problems.append(f"reference documents changed: {changed[:5]} counts {before[1:]} -> {after[1:]}")
        rss_end = rss(self.args.pid)
        peak = hwm(self.args.pid)
        print(f"hostile: seed {self.args.seed}: {sum(self.counts.values())} requests in {elapsed:.1f} s "
              f"({', '.join(f'{k} {v} in {self.seconds.get(k, 0):.1f} s' for k, v in sorted(self.counts.items()))}); statuses "
              f"{dict(sorted(self.statuses.items()))}; {len(slow_results)} slow clients; "
              f"RSS {rss_start:.0f} -> {rss_end:.0f} MB (peak {peak:.0f} MB, limit {self.args.rss_limit_mb} MB)")
        if rss_end > self.args.rss_limit_mb:
            self.problems.append(f"RSS {rss_end:.0f} MB after the campaign exceeds {self.args.rss_limit_mb} MB")
        return self.problems


def status_field(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def rss(pid):
    return status_field(pid, "VmRSS")


def hwm(pid):
    return status_field(pid, "VmHWM")


def main():
    parser = argparse.ArgumentParser()
    for name in ("base", "user", "password", "cert"):
        parser.add_argument(name)
    parser.add_argument("pid", type=int)
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--seed", type=int, default=int.from_bytes(os.urandom(4), "big"))
    parser.add_argument("--idle-timeout", type=float, default=3)
    parser.add_argument("--rss-limit-mb", type=float, default=120)
    args = parser.parse_args()
    problems = Campaign(args).run()
    if problems:
        shown = [p for p in problems if p]
        print(f"hostile: FAILED (seed {args.seed}, replay with --seed {args.seed}): {len(problems)} problems", file=sys.stderr)
        for p in shown:
            print("  " + p, file=sys.stderr)
        sys.exit(1)
    print("hostile: ok")


if __name__ == "__main__":
    main()
