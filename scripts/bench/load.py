#!/usr/bin/env python3
"""Many clients at once against a release `syncnode serve`, whole processes:

    load.py BIN_DIR [CLIENTS] [SECONDS]      (default 200 clients for 60 s)

Each client holds its own HTTPS connection (loopback, the node's certificate pinned) and, until
the time is up, picks an operation: read a document (35%), create or update one of its own
(25%), a page of _all_docs (10%), a page of _changes with documents (10%), a long poll on
_changes (5%), or a 100 KB attachment upload (15%). Every answer must be a 2xx; latency is
measured per operation. Afterwards every acknowledged write is read back.

Prints operations per second, p50/p99/max latency per operation, errors, and the node's peak
RSS. Target: no errors, no acknowledged write missing.
"""
import http.client, json, os, random, shutil, ssl, statistics, subprocess, sys, tempfile, threading, time

bin_dir = sys.argv[1]
clients = int(sys.argv[2]) if len(sys.argv) > 2 else 200
seconds = float(sys.argv[3]) if len(sys.argv) > 3 else 60
syncnode = os.path.join(bin_dir, "syncnode")
OPERATIONS = [("read", 35), ("write", 25), ("all_docs", 10), ("changes", 10), ("longpoll", 5), ("attachment", 15)]


def peak_rss(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


class Client(threading.Thread):
    def __init__(self, n, port, context, until, seeded):
        super().__init__(daemon=True)
        self.n, self.port, self.context, self.until = n, port, context, until
        self.random = random.Random(n)
        self.seeded = seeded
        self.latencies = {name: [] for name, _ in OPERATIONS}
        self.errors = []
        self.acknowledged = {}  # id -> rev
        self.connection = None

    def call(self, method, path, body=None, headers=None):
        for attempt in (1, 2):
            if self.connection is None:
                self.connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=60)
            try:
                self.connection.request(method, path, body=body, headers=headers or {})
                answer = self.connection.getresponse()
                data = answer.read()
                return answer.status, data
            except (ConnectionError, http.client.RemoteDisconnected, http.client.CannotSendRequest) as error:
                # A keep-alive the node closed between requests is retried once on a new connection.
                self.connection.close()
                self.connection = None
                if attempt == 2:
                    raise error

    def run(self):
        names = [name for name, _ in OPERATIONS]
        weights = [weight for _, weight in OPERATIONS]
        mine = 0
        while time.monotonic() < self.until:
            op = self.random.choices(names, weights)[0]
            started = time.perf_counter()
            try:
                if op == "read":
                    status, _ = self.call("GET", f"/load/seed{self.random.randrange(self.seeded):05d}")
                elif op == "write":
                    ids = list(self.acknowledged)
                    if ids and self.random.random() < 0.5:
                        doc_id = self.random.choice(ids)
                        body = {"_rev": self.acknowledged[doc_id], "client": self.n, "v": self.random.random()}
                    else:
                        doc_id = f"c{self.n:03d}-{mine:05d}"
                        mine += 1
                        body = {"client": self.n, "v": self.random.random()}
                    status, data = self.call("PUT", f"/load/{doc_id}", json.dumps(body), {"Content-Type": "application/json"})
                    if status == 201:
                        self.acknowledged[doc_id] = json.loads(data)["rev"]
                elif op == "all_docs":
                    status, _ = self.call("GET", f"/load/_all_docs?include_docs=true&limit=20&skip={self.random.randrange(self.seeded)}")
                elif op == "changes":
                    status, _ = self.call("GET", f"/load/_changes?include_docs=true&limit=50&since={self.random.randrange(self.seeded)}")
                elif op == "longpoll":
                    status, _ = self.call("GET", "/load/_changes?feed=longpoll&since=now&timeout=1000")
                else:
                    doc_id = f"a{self.n:03d}-{mine:05d}"
                    mine += 1
                    status, data = self.call("PUT", f"/load/{doc_id}/blob.bin", os.urandom(100 << 10), {"Content-Type": "application/octet-stream"})
                    if status == 201:
                        self.acknowledged[doc_id] = json.loads(data)["rev"]
            except Exception as error:  # noqa: BLE001 - every failure is counted and shown
                self.errors.append(f"{op}: {type(error).__name__}: {error}")
                continue
            self.latencies[op].append(time.perf_counter() - started)
            if not 200 <= status < 300:
                self.errors.append(f"{op}: HTTP {status}")


def main():
    work = tempfile.mkdtemp(prefix="syncnode-load-")
    node = None
    try:
        seeded = 2000
        lines = os.path.join(work, "seed.jsonl")
        with open(lines, "w") as f:
            for i in range(seeded):
                f.write(json.dumps({"_id": f"seed{i:05d}", "n": i, "text": "x" * 1000}) + "\n")
        subprocess.run([syncnode, "--dir", os.path.join(work, "node"), "import", "load", lines], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        node = subprocess.Popen(
            [syncnode, "--dir", os.path.join(work, "node"), "serve", "--anonymous", "--no-advertise", "--no-browse", "--qr", "none"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = int(node.stdout.readline().split("https://127.0.0.1:")[1].split("/")[0])
        context = ssl.create_default_context(cafile=os.path.join(work, "node", ".node", "tls", "cert.pem"))
        context.check_hostname = False
        until = time.monotonic() + seconds
        threads = [Client(n, port, context, until, seeded) for n in range(clients)]
        started = time.monotonic()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - started
        peak = peak_rss(node.pid)
        errors = [e for t in threads for e in t.errors]
        total = sum(len(v) for t in threads for v in t.latencies.values())
        print(f"{clients} clients for {elapsed:.0f} s: {total} operations ({total / elapsed:.0f}/s), "
              f"{len(errors)} errors, serving node peak RSS {peak:.0f} MB")
        print("| operation | count | p50 ms | p99 ms | max ms |")
        print("|---|---|---|---|---|")
        for name, _ in OPERATIONS:
            values = sorted(v for t in threads for v in t.latencies[name])
            if values:
                p99 = values[min(len(values) - 1, int(len(values) * 0.99))]
                print(f"| {name} | {len(values)} | {statistics.median(values) * 1000:.1f} | {p99 * 1000:.1f} | {values[-1] * 1000:.1f} |")
        for error in errors[:10]:
            print("  error:", error)
        # Every acknowledged write reads back at its acknowledged revision.
        check = Client(clients, port, context, 0, seeded)
        missing = []
        for t in threads:
            for doc_id, rev in t.acknowledged.items():
                status, data = check.call("GET", f"/load/{doc_id}")
                if status != 200 or json.loads(data).get("_rev") != rev:
                    missing.append(doc_id)
        acknowledged = sum(len(t.acknowledged) for t in threads)
        print(f"acknowledged writes read back: {acknowledged - len(missing)} of {acknowledged}"
              f"{'' if not missing else ' MISSING ' + ', '.join(missing[:5])}")
        print("verdict:", "met" if not errors and not missing else "MISSED")
    finally:
        if node:
            node.terminate()
            node.wait()
        shutil.rmtree(work, ignore_errors=True)


main()
