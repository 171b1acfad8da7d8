#!/usr/bin/env bash
# Benchmarks (release build): the store against raw SQLite, then `syncnode import`
# against a ten-line Python importer, both on the same N generated documents.
#   scripts/bench.sh [store|listener|replication|query|codable] [N]
#   scripts/bench.sh couchdb [N ...]   replication with CouchDB and PouchDB (needs SYNCNODE_COUCHDB_URL,
#                                      an admin URL, and SYNCNODE_POUCHDB_DIR, as the interoperability tests)
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_DETERMINISTIC_HASHING=1
what="${1:-store}"
n="${2:-100000}"

bash scripts/setup.sh --tests
swift build -c release >/dev/null
bin="$(swift build -c release --show-bin-path)"

case "$what" in
  store)
    "$bin/SyncNodeBenchmarks" store "$n"

    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    "$bin/SyncNodeBenchmarks" generate "$n" > "$work/docs.jsonl"
    cat > "$work/baseline.py" <<'PY'
import json, sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA journal_mode=WAL")
con.execute("CREATE TABLE docs(id TEXT PRIMARY KEY, body TEXT)")
with con:
    for line in open(sys.argv[2]):
        doc = json.loads(line)
        con.execute("INSERT INTO docs(id, body) VALUES(?, ?)", (doc["_id"], line))
print(con.execute("SELECT count(*) FROM docs").fetchone()[0])
PY
    now() { date +%s.%N; }
    t0=$(now); count=$(python3 "$work/baseline.py" "$work/py.sqlite3" "$work/docs.jsonl"); t1=$(now)
    out=$("$bin/syncnode" --dir "$work/node" import bench "$work/docs.jsonl" 2>/dev/null); t2=$(now)
    python3 - "$n" "$t0" "$t1" "$t2" "$count" "$out" <<'PY'
import json, sys
n, t0, t1, t2 = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
py, ours = t1 - t0, t2 - t1
imported = json.loads(sys.argv[6])["imported"]
assert int(sys.argv[5]) == n and imported == n, (sys.argv[5], imported)
print(f"cli import         syncnode {n/ours:9.0f} docs/s ({ours:.3f} s)   python {n/py:9.0f} docs/s ({py:.3f} s)   "
      f"ratio {ours/py:.2f} (target < 1.0: {'met' if ours < py else 'MISSED'}; whole processes)")
PY
    ;;
  listener|replication)
    # Logs go to a file, shown only when the benchmark fails.
    log="$(mktemp)"
    trap 'rm -f "$log"' EXIT
    default=$([ "$what" = listener ] && echo 20000 || echo 10000)
    "$bin/SyncNodeBenchmarks" "$what" "${2:-$default}" 2>"$log" || { cat "$log" >&2; exit 1; }
    ;;
  couchdb)
    : "${SYNCNODE_COUCHDB_URL:?set SYNCNODE_COUCHDB_URL to a CouchDB admin URL, e.g. http://admin:secret@127.0.0.1:5984}"
    : "${SYNCNODE_POUCHDB_DIR:?set SYNCNODE_POUCHDB_DIR to a folder with load-pouchdb.js and PouchDB bundles per version}"
    shift || true
    python3 scripts/bench/couchdb.py "$bin" "$SYNCNODE_COUCHDB_URL" "$SYNCNODE_POUCHDB_DIR" "$@"
    ;;
  query|codable)
    "$bin/SyncNodeBenchmarks" "$what" "$n"
    ;;
  *)
    echo "usage: scripts/bench.sh [store|listener|replication|query|codable] [N] | couchdb [N ...]" >&2
    exit 2
    ;;
esac
