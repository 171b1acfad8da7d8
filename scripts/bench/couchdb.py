#!/usr/bin/env python3
"""Replication speed with Apache CouchDB and PouchDB, every case in one run on the same documents.

    couchdb.py BIN_DIR COUCHDB_ADMIN_URL POUCHDB_DIR [N ...]      (default N: 10000 100000)

Cases, each into a fresh target; runs: 3 at N <= 20000 (median shown), else 1:
  couch->couch      CouchDB's replicator, CouchDB -> CouchDB (the baseline)
  node->couch       CouchDB's replicator pulling from a node over HTTPS (cookie auth)
  couch->node       CouchDB's replicator pushing to a node over HTTPS
  sync pull         `syncnode sync --pull` from CouchDB (whole process)
  sync push         `syncnode sync --push` to CouchDB (whole process)
  pouch<-couch      PouchDB (memory adapter, Node.js) pulling from CouchDB
  pouch<-node       PouchDB pulling from a node over HTTPS
Every case checks that all N documents arrived.
"""
import base64, json, os, ssl, statistics, subprocess, sys, tempfile, urllib.parse, urllib.request, uuid
from couchclient import Couch, fresh, timed

bin_dir, couch_url, pouch_dir = sys.argv[1], sys.argv[2].rstrip("/"), sys.argv[3]
sizes = [int(n) for n in sys.argv[4:]] or [10000, 100000]
here = os.path.dirname(os.path.abspath(__file__))
couch = Couch(couch_url)
user, password = "bench", "bench-" + uuid.uuid4().hex[:8]


def couch_count(db):
    return couch("GET", f"/{db}")["doc_count"]


def main():
    work = tempfile.mkdtemp(prefix="syncnode-bench-couchdb-")
    results = {}  # (case, n) -> [seconds]
    for n in sizes:
        docs = os.path.join(work, f"docs{n}.jsonl")
        with open(docs, "w") as out:
            subprocess.run([f"{bin_dir}/SyncNodeBenchmarks", "generate", str(n)], stdout=out, check=True)
        lines = open(docs).read().splitlines()
        source = fresh("src")
        couch("PUT", f"/{source}")
        for i in range(0, n, 1000):
            couch("POST", f"/{source}/_bulk_docs", {"docs": [json.loads(line) for line in lines[i:i + 1000]]})
        assert couch_count(source) == n
        node_dir = os.path.join(work, f"node{n}")
        subprocess.run([f"{bin_dir}/syncnode", "--dir", node_dir, "import", "src", docs], check=True, stdout=subprocess.DEVNULL)
        serve = subprocess.Popen([f"{bin_dir}/syncnode", "--dir", node_dir, "serve", "--host", "127.0.0.1", "--user", user,
                                  "--no-advertise", "--no-browse", "--qr", "none"],
                                 env={**{k: v for k, v in os.environ.items() if k != "SWIFT_DETERMINISTIC_HASHING"}, "SYNCNODE_PASSWORD": password},
                                 stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            line = serve.stdout.readline()
            port = urllib.parse.urlsplit(line.split("listening on ", 1)[1].strip()).port
            node = f"https://127.0.0.1:{port}"
            cert = os.path.join(node_dir, ".node/tls/cert.pem")
            node_endpoint = lambda db: {"url": f"{node}/{db}", "auth": {"basic": {"username": user, "password": password}}}
            couch_endpoint = couch.endpoint
            pusher = os.path.join(work, f"pusher{n}")
            subprocess.run([f"{bin_dir}/syncnode", "--dir", pusher, "import", "db", docs], check=True, stdout=subprocess.DEVNULL)

            def replicate(src, dst, check):
                seconds, answer = timed(lambda: couch("POST", "/_replicate", {"source": src, "target": dst, "create_target": True}))
                assert answer.get("ok"), answer
                assert check() == n, (answer, check())
                return seconds

            def node_count(db):
                request = urllib.request.Request(f"{node}/{db}", headers={
                    "Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()})
                context = ssl.create_default_context(cafile=cert)
                context.check_hostname = False
                with urllib.request.urlopen(request, context=context) as response:
                    return json.loads(response.read())["doc_count"]

            def syncnode(args):
                seconds, done = timed(lambda: subprocess.run([f"{bin_dir}/syncnode"] + args, check=True, capture_output=True, text=True))
                return seconds, json.loads(done.stdout)

            def pouch(url, env=None):
                done = subprocess.run(["node", os.path.join(here, "pouchdb_pull.js"), pouch_dir, "9.0.0", url], check=True,
                                      capture_output=True, text=True, env={**os.environ, **(env or {})})
                answer = json.loads(done.stdout.splitlines()[-1])
                assert answer["docs_written"] == n, answer
                return answer["seconds"]

            def couch_to_couch():
                target = fresh("cc")
                return replicate(couch_endpoint(source), couch_endpoint(target), lambda: couch_count(target))

            def node_to_couch():
                target = fresh("nc")
                return replicate(node_endpoint("src"), couch_endpoint(target), lambda: couch_count(target))

            def couch_to_node():
                target = fresh("cn")
                return replicate(couch_endpoint(source), node_endpoint(target), lambda: node_count(target))

            def sync_pull():
                seconds, counts = syncnode(["--dir", os.path.join(work, fresh("pull")), "sync", f"{couch_url}/{source}", "--pull", "--keyspace", "db"])
                assert counts["pulled"] == n, counts
                return seconds

            def sync_push():
                target = fresh("sp")
                couch("PUT", f"/{target}")
                seconds, counts = syncnode(["--dir", pusher, "sync", f"{couch_url}/{target}", "--push", "--keyspace", "db"])
                assert counts["pushed"] == n and couch_count(target) == n, counts
                return seconds

            cases = {
                "couch->couch": couch_to_couch,
                "node->couch": node_to_couch,
                "couch->node": couch_to_node,
                "sync pull": sync_pull,
                "sync push": sync_push,
                "pouch<-couch": lambda: pouch(f"{couch_url}/{source}"),
                "pouch<-node": lambda: pouch(f"https://{user}:{password}@127.0.0.1:{port}/src", {"NODE_EXTRA_CA_CERTS": cert}),
            }
            runs = 3 if n <= 20000 else 1
            for name, case in cases.items():
                results[(name, n)] = [case() for _ in range(runs)]
                print(f"  {name:13} {n:7} docs  {statistics.median(results[(name, n)]):7.2f} s", file=sys.stderr, flush=True)
        finally:
            serve.terminate()
            serve.wait()
            couch.drop_bench_databases()

    print(f"{'case':14}" + "".join(f"{n:>12} docs" for n in sizes) + "   (docs/s, median of 3 at N <= 20000)")
    rate = {key: key[1] / statistics.median(values) for key, values in results.items()}
    for name in dict.fromkeys(k[0] for k in results):
        print(f"{name:14}" + "".join(f"{rate[(name, n)]:17.0f}" for n in sizes))
    for label, a, b, target in [("node->couch / couch->couch", "node->couch", "couch->couch", 1.0),
                                ("sync pull / couch->couch", "sync pull", "couch->couch", 2.0),
                                ("pouch<-node / pouch<-couch", "pouch<-node", "pouch<-couch", 1.5)]:
        ratios = [rate[(a, n)] / rate[(b, n)] for n in sizes]
        verdict = "met" if all(r >= target for r in ratios) else "MISSED"
        print(f"{label:28}" + "".join(f"{r:8.2f}" for r in ratios) + f"   target >= {target} ({verdict})")


main()
