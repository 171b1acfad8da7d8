"""Measures a mesh of `syncnode serve --auto-sync` nodes from inside one lab host
(scripts/mesh-measure.sh runs it): convergence of single writes, convergence of many
writes with edits to shared documents, and a writer for the churn test.

  mesh_measure.py NODES formed
      waits until every node lists every other as a trusted peer with its sync idle
  mesh_measure.py NODES singles COUNT
      COUNT single writes on the first node, each timed until every node holds it (a long poll
      of each node's changes feed); prints p50 and p95, and the same until the first one does
  mesh_measure.py NODES spread COUNT
      COUNT writes spread over all nodes (a tenth of them edits of 20 shared documents),
      then the time until every node holds the same (id, winning rev) set (equal digests,
      then checked row by row)
  mesh_measure.py NODES write SECONDS OUT
      writes one document every 20 ms to the nodes in turn for SECONDS, skipping a node
      that does not answer; appends each acknowledged id to OUT
  mesh_measure.py NODES agree IDS
      waits until every node holds the same set and every id in the file IDS

NODES is a comma-separated list of HOST:PORT:USER:PASSWORD (each node's own credential).
"""
import base64
import http.client
import json
import ssl
import statistics
import sys
import threading
import time
import uuid
from urllib.parse import quote

CONTEXT = ssl.create_default_context()
CONTEXT.check_hostname = False
CONTEXT.verify_mode = ssl.CERT_NONE   # the lab's nodes are self-signed; this measures, it does not trust


class Node:
    def __init__(self, spec, db="default", tls=True):
        self.spec = spec
        self.db = db
        self.tls = tls
        self.host, port, user, password = spec.split(":", 3)
        self.port = int(port)
        self.auth = "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()
        self.conn = None

    def request(self, method, path, body=None, timeout=5, text=False):
        for attempt in (0, 1):
            try:
                if self.conn is None:
                    self.conn = http.client.HTTPSConnection(self.host, self.port, context=CONTEXT) if self.tls \
                        else http.client.HTTPConnection(self.host, self.port)
                self.conn.timeout = timeout
                if self.conn.sock is not None:
                    self.conn.sock.settimeout(timeout)
                headers = {"Authorization": self.auth, "Content-Type": "application/json", "Accept": "application/json"}
                self.conn.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
                response = self.conn.getresponse()
                data = response.read()
                if text:
                    return response.status, data.decode()
                return response.status, (json.loads(data) if data else None)
            except (OSError, http.client.HTTPException):
                if self.conn is not None:
                    self.conn.close()
                self.conn = None
                if attempt:
                    raise
        raise RuntimeError("unreachable")

    def peers(self):
        """The node's `GET /_node/peers`; None when it does not answer."""
        try:
            status, peers = self.request("GET", "/_node/peers")
        except (OSError, http.client.HTTPException):
            return None
        return peers if status == 200 else None

    def has(self, doc_id):
        try:
            return self.request("GET", f"/{self.db}/{doc_id}")[0] == 200
        except (OSError, http.client.HTTPException):
            return False

    def state(self):
        status, answer = self.request("GET", f"/{self.db}/_all_docs")
        return {(row["id"], row["value"]["rev"]) for row in answer["rows"]} if status == 200 else None

    def digest(self):
        """(count, root) of the node's digest: equal on two nodes when they hold the same
        documents at the same winning revisions. None when it does not answer."""
        try:
            status, answer = self.request("GET", f"/{self.db}/_digest?buckets=false")
            return (answer["count"], answer["root"]) if status == 200 else None
        except (OSError, http.client.HTTPException, ValueError, KeyError, TypeError):
            return None


def wait(predicate, limit, what):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.02)
    sys.exit(f"mesh_measure: {what} within {limit} s")


def formed(nodes):
    def ready():
        for node in nodes:
            peers = node.peers()
            if peers is None or len(peers) != len(nodes) - 1:
                return False
            if not all(p["trusted"] and p["collections"].get("default", {}).get("activity") == "idle" for p in peers):
                return False
        return True
    wait(ready, 120, "the mesh did not form (every node trusting and idle with every other)")


def requests_answered(nodes):
    """The requests the nodes have answered so far, by method (their Prometheus counters)."""
    total = {}
    for node in nodes:
        status, text = node.request("GET", "/_node/_local/_prometheus", text=True)
        if status != 200:
            sys.exit(f"mesh_measure: {node.host} answered {status} for its metrics")
        for line in text.splitlines():
            if line.startswith("syncnode_http_requests_total{"):
                method = line.split('method="', 1)[1].split('"', 1)[0]
                total[method] = total.get(method, 0) + float(line.rsplit(" ", 1)[1])
    return total


def singles(nodes, count):
    """Each write is watched on every other node at once by a long poll of its changes feed,
    which answers as the write commits there: the figure is the mesh's, not a polling loop's.
    Prints p50 and p95 of the time until every node holds the write ("all"), and of the time
    until the first one does (one hop)."""
    watchers = [Node(node.spec) for node in nodes[1:]]   # a connection each, for the long polls
    everywhere, first = [], []
    # The requests this measurement makes, left out of the mesh's count: the metrics read just
    # below shows in the one at the end, the one at the end in neither.
    own = {"GET": len(nodes), "PUT": 0}
    lock = threading.Lock()
    answered = requests_answered(nodes)
    for i in range(count):
        doc_id = f"single-{i}-{uuid.uuid4().hex[:8]}"
        since = [watcher.request("GET", "/default")[1]["update_seq"] for watcher in watchers]
        own["GET"] += len(watchers)
        arrivals = [None] * len(watchers)

        def watch(k):
            seq = since[k]
            while time.monotonic() < start + 30:
                with lock:
                    own["GET"] += 1
                status, answer = watchers[k].request("GET", f"/default/_changes?feed=longpoll&since={quote(str(seq))}&timeout=5000", timeout=35)
                if status != 200:
                    return
                if any(row["id"] == doc_id for row in answer["results"]):
                    arrivals[k] = time.monotonic() - start
                    return
                seq = answer["last_seq"]

        start = time.monotonic()
        pollers = [threading.Thread(target=watch, args=(k,)) for k in range(len(watchers))]
        for poller in pollers:
            poller.start()
        status, _ = nodes[0].request("PUT", f"/default/{doc_id}", {"n": i})
        own["PUT"] += 1
        if status != 201:
            sys.exit(f"mesh_measure: PUT {doc_id} answered {status}")
        for poller in pollers:
            poller.join()
        missing = arrivals.count(None)
        if missing:
            sys.exit(f"mesh_measure: {doc_id} did not reach {missing} nodes within 30 s")
        everywhere.append(max(arrivals))
        first.append(min(arrivals))
        time.sleep(0.1)

    def percentiles(times):
        times = sorted(times)
        p95 = times[min(len(times) - 1, int(round(0.95 * (len(times) - 1))))]
        return {"p50": round(statistics.median(times), 3), "p95": round(p95, 3), "max": round(times[-1], 3)}

    # What the mesh itself asked of its nodes per write (replication passes, checkpoints, audits, probes).
    after = requests_answered(nodes)
    mesh = {method: after[method] - answered.get(method, 0) - own.get(method, 0) for method in sorted(after)}
    per_write = {method: round(made / count, 1) for method, made in mesh.items() if made > 0}
    print(json.dumps({"writes": count, **percentiles(everywhere), "one hop": percentiles(first), "mesh requests per write": per_write}))


def spread(nodes, count):
    shared = [f"shared-{k}" for k in range(20)]
    start = time.monotonic()
    for i in range(count):
        node = nodes[i % len(nodes)]
        if i % 10 == 0:
            doc_id = shared[(i // 10) % len(shared)]
            status, current = node.request("GET", f"/default/{doc_id}")
            body = {"writer": node.host, "i": i}
            if status == 200:
                body["_rev"] = current["_rev"]
            node.request("PUT", f"/default/{doc_id}", body)   # a conflict (409) with a change in flight is fine
        else:
            status, _ = node.request("PUT", f"/default/spread-{i}", {"writer": node.host, "i": i})
            if status != 201:
                sys.exit(f"mesh_measure: PUT spread-{i} answered {status}")
    written = time.monotonic() - start
    checks = []

    # Each check asks every node for its digest's root, all at once (check_ms): reading every
    # node's `_all_docs` in turn (rows_check_ms, once they agree) made the figure this loop's
    # pace as much as the mesh's.
    def agree():
        began = time.monotonic()
        digests = [None] * len(nodes)

        def ask(k):
            digests[k] = nodes[k].digest()
        askers = [threading.Thread(target=ask, args=(k,)) for k in range(len(nodes))]
        for asker in askers:
            asker.start()
        for asker in askers:
            asker.join()
        checks.append(time.monotonic() - began)
        # Every write was acknowledged by a node: once all hold the same set, all hold every write.
        return digests[0] is not None and all(d == digests[0] for d in digests)
    wait(agree, 300, "the nodes did not agree")
    converged = time.monotonic() - start - written
    # What the digests said, checked row by row.
    began = time.monotonic()
    states = [node.state() for node in nodes]
    rows_check = time.monotonic() - began
    if states[0] is None or any(s != states[0] for s in states):
        sys.exit("mesh_measure: the nodes' digests agree but their documents do not")
    held = sum(1 for (doc_id, _) in states[0] if doc_id.startswith("spread-"))
    if held != count - count // 10:
        sys.exit(f"mesh_measure: the nodes agree, but on {held} spread documents, not {count - count // 10}")
    print(json.dumps({"writes": count, "nodes": len(nodes), "written_in": round(written, 2),
                      "converged_after_last_write": round(converged, 2), "documents": len(states[0]),
                      "check_ms": round(1000 * statistics.median(checks), 1), "rows_check_ms": round(1000 * rows_check, 1)}))


def writer(nodes, seconds, out):
    deadline = time.monotonic() + seconds
    i = 0
    with open(out, "a") as acknowledged:
        while time.monotonic() < deadline:
            node = nodes[i % len(nodes)]
            doc_id = f"churn-{i}"
            try:
                status, _ = node.request("PUT", f"/default/{doc_id}", {"i": i}, timeout=2)
                if status == 201:
                    acknowledged.write(doc_id + "\n")
                    acknowledged.flush()
            except (OSError, http.client.HTTPException):
                pass   # that node is down: the write was not acknowledged
            i += 1
            time.sleep(0.02)


def agree_with(nodes, ids_file):
    wanted = {line.strip() for line in open(ids_file) if line.strip()}

    def agree():
        states = [node.state() for node in nodes]
        if states[0] is None or any(s != states[0] for s in states):
            return False
        return wanted <= {doc_id for (doc_id, _) in states[0]}
    start = time.monotonic()
    wait(agree, 300, "the nodes did not agree after the churn")
    print(json.dumps({"acknowledged": len(wanted), "agreed_after": round(time.monotonic() - start, 2),
                      "documents": len(nodes[0].state())}))


def main():
    nodes = [Node(spec) for spec in sys.argv[1].split(",")]
    command = sys.argv[2]
    if command == "formed":
        formed(nodes)
    elif command == "singles":
        singles(nodes, int(sys.argv[3]))
    elif command == "spread":
        spread(nodes, int(sys.argv[3]))
    elif command == "write":
        writer(nodes, float(sys.argv[3]), sys.argv[4])
    elif command == "agree":
        agree_with(nodes, sys.argv[3])
    elif command == "requests":
        print(json.dumps(requests_answered(nodes)))
    else:
        sys.exit(f"mesh_measure: unknown command {command}")


if __name__ == "__main__":
    main()
