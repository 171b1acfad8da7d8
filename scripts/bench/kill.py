#!/usr/bin/env python3
"""A release `syncnode serve` killed (SIGKILL) again and again during writes and replication:

    kill.py BIN_DIR [KILLS]      (default 30)

The node serves `src` and `dst` on a fixed loopback port and runs a continuous `_replicate`
from `src` to `dst` (started again after each restart). Four writers create documents one by
one and a fifth writes batches of 50 with `_bulk_docs`, remembering each write the node
acknowledged (2xx). Every 0.5 to 2.5 s the node is killed with SIGKILL and started again.

Afterwards: SQLite's integrity_check on every database file, every acknowledged write read
back at its revision, and, after a last one-shot replication, `dst` holding what `src` holds.
Target: no acknowledged write lost, every integrity check ok.
"""
import http.client, json, os, random, shutil, signal, socket, ssl, subprocess, sys, tempfile, threading, time

bin_dir = sys.argv[1]
kills = int(sys.argv[2]) if len(sys.argv) > 2 else 30
syncnode = os.path.join(bin_dir, "syncnode")


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Node:
    def __init__(self, directory, port):
        self.directory, self.port = directory, port
        self.process = None

    def start(self):
        self.process = subprocess.Popen(
            [syncnode, "--dir", self.directory, "serve", "--anonymous", "--no-advertise", "--no-browse", "--qr", "none",
             "--port", str(self.port)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        line = self.process.stdout.readline()
        if "listening on" not in line:
            raise SystemExit(f"serve did not start: {line!r}")
        self.context = ssl.create_default_context(cafile=os.path.join(self.directory, ".node", "tls", "cert.pem"))
        self.context.check_hostname = False

    def call(self, method, path, value=None, timeout=30):
        connection = http.client.HTTPSConnection("127.0.0.1", self.port, context=self.context, timeout=timeout)
        try:
            body = None if value is None else json.dumps(value)
            connection.request(method, path, body=body, headers={"Content-Type": "application/json"})
            answer = connection.getresponse()
            return answer.status, json.loads(answer.read() or b"null")
        finally:
            connection.close()


class Writer(threading.Thread):
    def __init__(self, node, n, stop, bulk=False):
        super().__init__(daemon=True)
        self.node, self.n, self.stop, self.bulk = node, n, stop, bulk
        self.acknowledged = {}
        self.failed = 0

    def run(self):
        i = 0
        while not self.stop.is_set():
            try:
                if self.bulk:
                    docs = [{"_id": f"b{self.n}-{i + k:06d}", "k": k, "text": "y" * 200} for k in range(50)]
                    i += 50
                    status, answer = self.node.call("POST", "/src/_bulk_docs", {"docs": docs}, timeout=10)
                    if status == 201:
                        for result in answer:
                            if result.get("ok"):
                                self.acknowledged[result["id"]] = result["rev"]
                else:
                    doc_id = f"w{self.n}-{i:06d}"
                    i += 1
                    status, answer = self.node.call("PUT", f"/src/{doc_id}", {"n": i, "text": "x" * 500}, timeout=10)
                    if status == 201:
                        self.acknowledged[doc_id] = answer["rev"]
            except (OSError, http.client.HTTPException, ValueError, ssl.SSLError):
                # The node is down (being killed or restarting): that write was never acknowledged.
                self.failed += 1
                time.sleep(0.05)


def integrity(directory):
    """(files checked, problems) of SQLite's integrity_check over every database file."""
    checked, problems = 0, []
    for root, _, files in os.walk(directory):
        for name in files:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                if f.read(16) != b"SQLite format 3\x00":
                    continue
            out = subprocess.run(["sqlite3", path, "PRAGMA integrity_check"], capture_output=True, text=True).stdout.strip()
            checked += 1
            if out != "ok":
                problems.append(f"{path}: {out[:200]}")
    return checked, problems


def main():
    work = tempfile.mkdtemp(prefix="syncnode-kill-")
    node = Node(os.path.join(work, "node"), free_port())
    try:
        node.start()
        for db in ("src", "dst"):
            node.call("PUT", f"/{db}")

        def replicate():
            node.call("POST", "/_replicate", {"source": "src", "target": "dst", "continuous": True})

        replicate()
        stop = threading.Event()
        writers = [Writer(node, n, stop) for n in range(4)] + [Writer(node, 4, stop, bulk=True)]
        for w in writers:
            w.start()
        rng = random.Random(1)
        started = time.monotonic()
        for k in range(kills):
            time.sleep(rng.uniform(0.5, 2.5))
            node.process.send_signal(signal.SIGKILL)
            node.process.wait()
            node.start()
            replicate()
        time.sleep(1)
        stop.set()
        for w in writers:
            w.join()
        elapsed = time.monotonic() - started
        acknowledged = {doc: rev for w in writers for doc, rev in w.acknowledged.items()}
        lost = []
        for doc_id, rev in acknowledged.items():
            status, doc = node.call("GET", f"/src/{doc_id}")
            if status != 200 or doc.get("_rev") != rev:
                lost.append(doc_id)
        status, answer = node.call("POST", "/_replicate", {"source": "src", "target": "dst"}, timeout=300)
        src = node.call("GET", "/src")[1]["doc_count"]
        dst = node.call("GET", "/dst")[1]["doc_count"]
        node.process.terminate()
        node.process.wait()
        checked, problems = integrity(node.directory)
        print(f"{kills} kills (SIGKILL) in {elapsed:.0f} s during writes and a continuous replication: "
              f"{len(acknowledged)} writes acknowledged, {len(lost)} lost; {sum(w.failed for w in writers)} "
              f"requests failed while the node was down; src {src} documents, dst {dst} after a last "
              f"one-shot replication ({status}); integrity_check ok on {checked - len(problems)} of {checked} files")
        for problem in problems:
            print("  integrity:", problem)
        if lost:
            print("  lost:", ", ".join(lost[:10]))
        print("verdict:", "met" if not lost and not problems and src == dst and checked > 0 else "MISSED")
    finally:
        if node.process and node.process.poll() is None:
            node.process.kill()
        shutil.rmtree(work, ignore_errors=True)


main()
