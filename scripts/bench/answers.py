#!/usr/bin/env python3
"""Peak memory of a release `syncnode serve` while it answers big reads, whole processes:

    answers.py BIN_DIR [MB]          (default 1024)

Two databases of MB megabytes each are imported with `syncnode import`: `big`, documents of
50 MB (the size a hostile campaign used), and `many`, documents of 100 KB. A node serves them
(loopback HTTPS) and curl, an independent client, reads each answer to /dev/null: _all_docs,
every _changes feed, _find (through an index, and without one), _bulk_get, open_revs, one
document, and SQL++ _query (written to a file as read, then sent). Before each, the node's peak
RSS is reset (/proc/PID/clear_refs); after, its peak is read (VmHWM). Then the four big answers run at once.

Targets: each answer alone peaks at <= 150 MB; four at once stay within 150 MB plus the answer
memory budget (96 MiB), instead of adding up. Each answer's size is checked against the data.
"""
import json, os, shutil, subprocess, sys, tempfile, threading, time

bin_dir = sys.argv[1]
megabytes = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
syncnode = os.path.join(bin_dir, "syncnode")
LIMIT_MB = 150
BUDGET_MB = 96


def status(pid):
    fields = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            name, _, value = line.partition(":")
            if value.strip().endswith("kB"):
                fields[name] = int(value.split()[0]) / 1024
    return fields


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


def generate(path, count, size, kind):
    """count documents of about size bytes as JSON lines."""
    with open(path, "w") as f:
        for i in range(count):
            filler = chr(97 + i % 26) * (size - 60)
            f.write(json.dumps({"_id": f"doc{i:06d}", "kind": kind, "n": i, "text": filler}) + "\n")


def curl(port, path, body=None, accept=None):
    """(bytes, seconds) of one answer read to /dev/null."""
    command = ["curl", "-sk", "-o", "/dev/null", "-w", "%{http_code} %{size_download}", f"https://127.0.0.1:{port}{path}"]
    if body is not None:
        # From a file: a _bulk_get of ten thousand IDs is longer than a command line may be.
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
            f.write(body)
        command += ["-H", "Content-Type: application/json", "--data-binary", "@" + f.name]
    if accept:
        command += ["-H", f"Accept: {accept}"]
    started = time.perf_counter()
    try:
        out = subprocess.run(command, capture_output=True, text=True)
    finally:
        if body is not None:
            os.remove(f.name)
    code, size = (out.stdout.split() + ["0", "0"])[:2]
    if out.returncode != 0 or not code.startswith("2"):
        raise SystemExit(f"curl {path} failed (exit {out.returncode}, HTTP {code}): {out.stderr}")
    return int(size), time.perf_counter() - started


def main():
    work = tempfile.mkdtemp(prefix="syncnode-answers-")
    node = None
    try:
        shapes = {"big": (50 << 20, "big"), "many": (100 << 10, "many")}
        for db, (size, kind) in shapes.items():
            count = max(1, (megabytes << 20) // size)
            lines = os.path.join(work, f"{db}.jsonl")
            generate(lines, count, size, kind)
            started = time.perf_counter()
            subprocess.run([syncnode, "--dir", os.path.join(work, "node"), "import", db, lines, "--batch-size", "20"],
                           check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            print(f"imported {db}: {count} documents of {size >> 10} KB in {time.perf_counter() - started:.1f} s", flush=True)
            os.remove(lines)
        port_file = os.path.join(work, "port")
        log = open(os.path.join(work, "serve.log"), "w")
        node = subprocess.Popen(
            [syncnode, "--dir", os.path.join(work, "node"), "serve", "--anonymous", "--no-advertise", "--no-browse", "--qr", "none"],
            stdout=subprocess.PIPE, stderr=log, text=True)
        first = node.stdout.readline()
        port = int(first.split("https://127.0.0.1:")[1].split("/")[0])
        for db in shapes:
            _, seconds = curl(port, f"/{db}/_index", json.dumps({"index": {"fields": ["kind"]}, "name": "kind"}))
            print(f"index on kind in {db}: {seconds:.1f} s", flush=True)
        idle = status(node.pid)["VmRSS"]
        print(f"serving node at rest: {idle:.0f} MB\n")
        data = {db: (megabytes << 20) // size * size for db, (size, _) in shapes.items()}
        asks = []
        for db, (size, kind) in shapes.items():
            bulk = json.dumps({"docs": [{"id": f"doc{i:06d}"} for i in range((megabytes << 20) // size)]})
            asks += [
                (db, "_all_docs?include_docs", "GET", f"/{db}/_all_docs?include_docs=true", None, None, True),
                (db, "_changes?include_docs", "GET", f"/{db}/_changes?include_docs=true", None, None, True),
                (db, "_changes continuous", "GET", f"/{db}/_changes?feed=continuous&include_docs=true&timeout=1", None, None, True),
                (db, "_find (index)", "POST", f"/{db}/_find", json.dumps({"selector": {"kind": kind}, "limit": 1 << 30}), None, True),
                (db, "_find (no index)", "POST", f"/{db}/_find", json.dumps({"selector": {"n": {"$gte": 0}}, "limit": 1 << 30}), None, True),
                (db, "_bulk_get", "POST", f"/{db}/_bulk_get", bulk, None, True),
                (db, "_query SELECT *", "POST", f"/{db}/_query", json.dumps({"query": "SELECT * FROM _"}), None, True),
                (db, "open_revs=all", "GET", f"/{db}/doc000000?open_revs=all", None, "multipart/mixed", False),
                (db, "GET one document", "GET", f"/{db}/doc000000", None, None, False),
            ]
        print(f"| database | answer | MB sent | s | MB/s | peak RSS MB | verdict (<= {LIMIT_MB} MB) |")
        print("|---|---|---|---|---|---|---|")
        for db, name, _, path, body, accept, whole in asks:
            reset_peak(node.pid)
            sent, seconds = curl(port, path, body, accept)
            peak = status(node.pid)["VmHWM"]
            if whole and sent < data[db] * 0.95:
                raise SystemExit(f"{db} {name}: sent {sent} bytes, short of the {data[db]} stored")
            verdict = "met" if peak <= LIMIT_MB else "MISSED"
            print(f"| {db} | {name} | {sent / 1e6:.0f} | {seconds:.2f} | {sent / 1e6 / seconds:.0f} | {peak:.0f} | {verdict} |", flush=True)
        for db in shapes:
            together = [a for a in asks if a[0] == db and a[1] in ("_all_docs?include_docs", "_changes?include_docs", "_find (index)", "_bulk_get")]
            reset_peak(node.pid)
            results = [None] * len(together)

            def read(i, ask):
                results[i] = curl(port, ask[3], ask[4], ask[5])

            threads = [threading.Thread(target=read, args=(i, a)) for i, a in enumerate(together)]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            seconds = time.perf_counter() - started
            peak = status(node.pid)["VmHWM"]
            if any(r is None or r[0] < data[db] * 0.95 for r in results):
                raise SystemExit(f"{db}: an answer of the four at once came short: {results}")
            verdict = "met" if peak <= LIMIT_MB + BUDGET_MB else "MISSED"
            print(f"\nfour at once on {db}: {sum(r[0] for r in results) / 1e6:.0f} MB in {seconds:.1f} s, "
                  f"peak RSS {peak:.0f} MB ({verdict}: <= {LIMIT_MB} + {BUDGET_MB} MB budget)", flush=True)
    except BaseException:
        if node:
            print(f"serve exited {node.poll()}; its log ends:", open(os.path.join(work, "serve.log")).read()[-2000:], file=sys.stderr)
        raise
    finally:
        if node:
            node.terminate()
            node.wait()
        shutil.rmtree(work, ignore_errors=True)


main()
