#!/usr/bin/env python3
"""Selective replication: a selector matching 1% of N documents, every case in one run.

    selective.py BIN_DIR COUCHDB_ADMIN_URL [N]      (default N: 100000)

The selector is {"index": {"$mod": [100, 7]}}: N/100 documents. Cases (median of 3 runs):
  filtered pull      `syncnode sync --pull --selector` from a node holding N (whole process)
  1% pull            `syncnode sync --pull` from a node's database holding just those N/100
  couch selector     CouchDB's replicator with the selector, CouchDB (N) -> CouchDB
  node selector      CouchDB's replicator with the selector, a node (N) -> CouchDB
  indexed pull       the filtered pull from a copy of the N documents with a selector index on the
                     selector (`syncnode index create --selector`)
  node indexed       CouchDB's replicator with the selector from that copy
  indexed equality   `syncnode sync --pull --selector '{"quantity": 7}'` from the node holding N,
                     where a value index on quantity serves the selector (about N/1000 match)
Every case checks that exactly the matching documents arrived.
Targets: filtered pull <= 2x the 1% pull (printed with and without the selector index); node
selector >= 3x as fast as couch selector.
"""
import json, os, statistics, subprocess, sys, tempfile, urllib.parse, uuid
from couchclient import Couch, fresh, timed

bin_dir, couch_url = sys.argv[1], sys.argv[2].rstrip("/")
n = int(sys.argv[3]) if len(sys.argv) > 3 else 100000
selector = {"index": {"$mod": [100, 7]}}
couch = Couch(couch_url)
user, password = "bench", "bench-" + uuid.uuid4().hex[:8]


def main():
    work = tempfile.mkdtemp(prefix="syncnode-bench-selective-")
    docs = os.path.join(work, "docs.jsonl")
    with open(docs, "w") as out:
        subprocess.run([f"{bin_dir}/SyncNodeBenchmarks", "generate", str(n)], stdout=out, check=True)
    lines = open(docs).read().splitlines()
    matching = [line for line in lines if json.loads(line)["index"] % 100 == 7]
    wanted = len(matching)
    by_quantity = {"quantity": 7}
    wanted_by_quantity = sum(1 for line in lines if json.loads(line)["quantity"] == 7)
    small = os.path.join(work, "small.jsonl")
    with open(small, "w") as out:
        out.write("\n".join(matching) + "\n")
    print(f"selective: {n} documents, {wanted} match {json.dumps(selector)}", file=sys.stderr, flush=True)

    source = fresh("src")
    couch("PUT", f"/{source}")
    for i in range(0, n, 2000):
        couch("POST", f"/{source}/_bulk_docs", {"docs": [json.loads(line) for line in lines[i:i + 2000]]})
    node_dir = os.path.join(work, "node")
    for db, path in [("src", docs), ("small", small), ("indexed", docs)]:
        subprocess.run([f"{bin_dir}/syncnode", "--dir", node_dir, "import", db, path], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([f"{bin_dir}/syncnode", "--dir", node_dir, "index", "create", "indexed", "mod", "--selector", json.dumps(selector)],
                   check=True, stdout=subprocess.DEVNULL)
    # Unused by the $mod selector (no value index can serve it); serves the indexed-equality case.
    subprocess.run([f"{bin_dir}/syncnode", "--dir", node_dir, "index", "create", "src", "by-quantity", "--value", "quantity"],
                   check=True, stdout=subprocess.DEVNULL)
    fingerprint = json.loads(subprocess.run([f"{bin_dir}/syncnode", "--dir", node_dir, "identity"], check=True,
                                            capture_output=True, text=True).stdout)["fingerprint"]
    serve = subprocess.Popen([f"{bin_dir}/syncnode", "--dir", node_dir, "serve", "--host", "127.0.0.1", "--user", user,
                              "--no-advertise", "--no-browse", "--qr", "none"],
                             env={**{k: v for k, v in os.environ.items() if k != "SWIFT_DETERMINISTIC_HASHING"}, "SYNCNODE_PASSWORD": password},
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    results = {}
    try:
        line = serve.stdout.readline()
        port = urllib.parse.urlsplit(line.split("listening on ", 1)[1].strip()).port
        node_url = lambda db: f"https://{user}:{password}@127.0.0.1:{port}/{db}?fp={fingerprint}"
        node_endpoint = lambda db: {"url": f"https://127.0.0.1:{port}/{db}", "auth": {"basic": {"username": user, "password": password}}}
        couch_endpoint = couch.endpoint

        def pull(db, extra, expected=wanted):
            seconds, done = timed(lambda: subprocess.run(
                [f"{bin_dir}/syncnode", "--dir", os.path.join(work, fresh("pull")), "sync", node_url(db), "--pull", "--keyspace", "db"] + extra,
                check=True, capture_output=True, text=True))
            pulled = json.loads(done.stdout.splitlines()[-1])["pulled"]
            assert pulled == expected, (pulled, expected)
            return seconds

        def couch_replicator(src):
            target = fresh("dst")
            seconds, answer = timed(lambda: couch("POST", "/_replicate", {"source": src, "target": couch_endpoint(target),
                                                                          "create_target": True, "selector": selector}))
            assert answer.get("ok"), answer
            count = couch("GET", f"/{target}")["doc_count"]
            assert count == wanted, (count, wanted)
            return seconds

        cases = {
            "filtered pull": lambda: pull("src", ["--selector", json.dumps(selector)]),
            "1% pull": lambda: pull("small", []),
            "couch selector": lambda: couch_replicator(couch_endpoint(source)),
            "node selector": lambda: couch_replicator(node_endpoint("src")),
            "indexed pull": lambda: pull("indexed", ["--selector", json.dumps(selector)]),
            "node indexed": lambda: couch_replicator(node_endpoint("indexed")),
            "indexed equality": lambda: pull("src", ["--selector", json.dumps(by_quantity)], wanted_by_quantity),
        }
        for name, case in cases.items():
            results[name] = statistics.median([case() for _ in range(3)])
            print(f"  {name:16} {results[name]:7.3f} s", file=sys.stderr, flush=True)
    finally:
        serve.terminate()
        serve.wait()
        couch.drop_bench_databases()

    print(f"{'case':17}{'seconds':>10}   ({wanted} of {n} documents match $mod, {wanted_by_quantity} match quantity; median of 3)")
    for name, seconds in results.items():
        print(f"{name:17}{seconds:10.3f}")
    for label, ratio, target, met in [
        ("filtered pull / 1% pull", results["filtered pull"] / results["1% pull"], "<= 2.0", lambda r: r <= 2.0),
        ("indexed pull / 1% pull", results["indexed pull"] / results["1% pull"], "<= 2.0", lambda r: r <= 2.0),
        ("couch selector / node selector", results["couch selector"] / results["node selector"], ">= 3.0", lambda r: r >= 3.0),
    ]:
        print(f"{label:32}{ratio:8.2f}   target {target} ({'met' if met(ratio) else 'MISSED'})")


main()
