"""What the CouchDB benchmarks share: an admin client of a CouchDB, timing, fresh names."""
import base64, json, time, urllib.parse, urllib.request, uuid


class Couch:
    """A CouchDB reached with an admin URL (http://user:password@host:port)."""

    def __init__(self, admin_url):
        parts = urllib.parse.urlsplit(admin_url.rstrip("/"))
        self.base = f"{parts.scheme}://{parts.hostname}:{parts.port}"
        credentials = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password)}"
        self.auth = "Basic " + base64.b64encode(credentials.encode()).decode()

    def __call__(self, method, path, body=None):
        request = urllib.request.Request(self.base + path, method=method, data=None if body is None else json.dumps(body).encode(),
                                         headers={"Authorization": self.auth, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=3600) as response:
            return json.loads(response.read())

    def endpoint(self, db):
        """A database as CouchDB's replicator takes a source or target."""
        return {"url": f"{self.base}/{db}", "headers": {"Authorization": self.auth}}

    def drop_bench_databases(self):
        for db in self("GET", "/_all_dbs"):
            if db.startswith("bench_"):
                self("DELETE", f"/{db}")


def timed(run):
    started = time.perf_counter()
    result = run()
    return time.perf_counter() - started, result


def fresh(prefix):
    return f"bench_{prefix}_{uuid.uuid4().hex[:8]}"
