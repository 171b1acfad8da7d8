#!/usr/bin/env python3
"""Whole processes, timed as a user times them, on the same generated documents:

    scale.py BIN_DIR [N ...]          (default N: 100000)

  python import   a Python importer: json.loads for each line's _id, one executemany in one
                  transaction into (id TEXT PRIMARY KEY, body TEXT): the strongest plain baseline
  syncnode import `syncnode import` of the same JSON lines into a fresh node
  sync pull       `syncnode sync --pull` into a fresh node from a `syncnode serve` of the imported
                  node (loopback HTTPS, Basic auth), everything each process does included; in
                  turn with gzip (the default) and with --no-compression, counting the body bytes
                  that crossed (the serving node's metrics)

Runs alternate the two importers, and the two pulls; 3 runs (median shown) at N <= 200000, else 1.
Targets: import faster than Python (ratio < 1.0), pull <= 2.0x import, a gzip pull's bytes <= 0.35x
the plain pull's, and peak RSS flat as N grows (printed per N). Each case checks that all N
documents arrived.
"""
import json
import base64, ssl, urllib.parse, urllib.request, os, shutil, statistics, subprocess, sys, tempfile, time

bin_dir = sys.argv[1]
sizes = [int(n) for n in sys.argv[2:]] or [100000]
syncnode = os.path.join(bin_dir, "syncnode")
user, password = "bench", "bench-secret"

PYTHON_IMPORTER = """
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA journal_mode=WAL")
con.execute("CREATE TABLE docs(id TEXT PRIMARY KEY, body TEXT)")
with con, open(sys.argv[2]) as lines:
    con.executemany("INSERT INTO docs(id, body) VALUES(?, ?)", ((json.loads(line)["_id"], line) for line in lines))
print(con.execute("SELECT count(*) FROM docs").fetchone()[0])
"""


def run(command, stdout=subprocess.PIPE):
    """(seconds, peak RSS in MB, stdout) of one whole process."""
    # The disk first takes what earlier runs wrote, so no run pays for another's writeback.
    os.sync()
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=stdout, stderr=subprocess.DEVNULL)
    output = process.stdout.read() if stdout == subprocess.PIPE else b""
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {process.returncode}")
    return seconds, usage.ru_maxrss / 1024, output


def body_bytes(printed):
    """The request and answer body bytes the serving node has moved, as they crossed the wire."""
    request = urllib.request.Request(f"https://{printed.hostname}:{printed.port}/_node/_local/_prometheus")
    request.add_header("Authorization", "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode())
    # Loopback, our own node, and only its metrics: its self-signed certificate is not checked.
    with urllib.request.urlopen(request, context=ssl._create_unverified_context()) as answer:
        lines = [l for l in answer.read().decode().splitlines() if l.startswith("syncnode_http_body_bytes_total{")]
    assert len(lines) == 2, lines
    return sum(float(l.split()[-1]) for l in lines)


def vm_hwm(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def verdict(ratio, target):
    return "met" if ratio <= target else "MISSED"


def main():
    work = tempfile.mkdtemp(prefix="syncnode-bench-scale-")
    importer = os.path.join(work, "importer.py")
    with open(importer, "w") as f:
        f.write(PYTHON_IMPORTER)
    try:
        for n in sizes:
            runs = 3 if n <= 200_000 else 1
            docs = os.path.join(work, f"docs{n}.jsonl")
            with open(docs, "w") as out:
                subprocess.run([os.path.join(bin_dir, "SyncNodeBenchmarks"), "generate", str(n)], stdout=out, check=True)
            python_times, import_times, import_rss = [], [], []
            node = None
            for i in range(runs):
                target = os.path.join(work, f"py{n}-{i}.sqlite3")
                seconds, _, out = run([sys.executable, importer, target, docs])
                assert int(out) == n, out
                python_times.append(seconds)
                os.remove(target)
                node = os.path.join(work, f"node{n}-{i}")
                seconds, rss, out = run([syncnode, "--dir", node, "import", "bench", docs])
                assert json.loads(out)["imported"] == n, out
                import_times.append(seconds)
                import_rss.append(rss)
                if i < runs - 1:
                    shutil.rmtree(node)
            python, imported = statistics.median(python_times), statistics.median(import_times)

            serve = subprocess.Popen([syncnode, "--dir", node, "serve", "--db", "bench", "--host", "127.0.0.1", "--user", user,
                                      "--no-advertise", "--no-browse", "--qr", "none"],
                                     env={**{k: v for k, v in os.environ.items() if k != "SWIFT_DETERMINISTIC_HASHING"}, "SYNCNODE_PASSWORD": password},
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            try:
                line = serve.stdout.readline().decode()
                assert line.startswith("syncnode: listening on "), line
                # The printed URL is an invitation; the pulls sign in with the password, so they time replication alone.
                printed = urllib.parse.urlsplit(line.split("listening on ", 1)[1].strip())
                query = "&".join(p for p in printed.query.split("&") if not p.startswith(("invite=", "addr=")))
                url = f"https://{user}:{password}@{printed.hostname}:{printed.port}{printed.path}?{query}"
                pull_times, pull_rss = {"gzip": [], "plain": []}, []
                wire = {"gzip": [], "plain": []}
                for i in range(runs):
                    # Each goes first in every other run.
                    for kind in (["gzip", "plain"] if i % 2 == 0 else ["plain", "gzip"]):
                        target = os.path.join(work, f"pull{n}-{i}-{kind}")
                        before = body_bytes(printed)
                        seconds, rss, out = run([syncnode, "--dir", target, "sync", url, "--pull"]
                                                + (["--no-compression"] if kind == "plain" else []))
                        wire[kind].append(body_bytes(printed) - before)
                        assert json.loads(out)["pulled"] == n, out
                        pull_times[kind].append(seconds)
                        pull_rss.append(rss)
                        shutil.rmtree(target)
                server_rss = vm_hwm(serve.pid)
            finally:
                serve.terminate()
                serve.wait()
            pulled, plain = statistics.median(pull_times["gzip"]), statistics.median(pull_times["plain"])
            gzip_bytes, plain_bytes = statistics.median(wire["gzip"]), statistics.median(wire["plain"])
            shutil.rmtree(node)
            os.remove(docs)

            label = f"{n} docs, {'median of ' + str(runs) if runs > 1 else '1 run'}"
            print(f"import ({label}): syncnode {n / imported:8.0f} docs/s ({imported:.2f} s)   python executemany "
                  f"{n / python:8.0f} docs/s ({python:.2f} s)   ratio {imported / python:.2f} "
                  f"(target < 1.0: {'met' if imported < python else 'MISSED'})")
            print(f"pull   ({label}): syncnode {n / pulled:8.0f} docs/s ({pulled:.2f} s)   vs its import   "
                  f"ratio {pulled / imported:.2f} (target <= 2.0: {verdict(pulled / imported, 2.0)})")
            print(f"pull   ({label}), --no-compression: {plain:.2f} s, ratio {plain / imported:.2f} to its import; "
                  f"gzip / plain time {pulled / plain:.2f}")
            print(f"wire   ({label}): gzip pull {gzip_bytes / 1e6:.1f} MB of bodies, plain {plain_bytes / 1e6:.1f} MB, "
                  f"ratio {gzip_bytes / plain_bytes:.3f} (target <= 0.35: {verdict(gzip_bytes / plain_bytes, 0.35)})")
            print(f"peak RSS ({n} docs): import {max(import_rss):.0f} MB, pull {max(pull_rss):.0f} MB, serving node {server_rss:.0f} MB")
            sys.stdout.flush()
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
