#!/usr/bin/env bash
# Benchmarks (release build): the store against raw SQLite, then `syncnode import` against
# Python's executemany and `syncnode sync --pull` against that import (whole processes), all
# on the same N generated documents.
#   scripts/bench.sh [store|listener|replication|query|codable|mesh] [N]
#   scripts/bench.sh digest [N]        the collection digest: write overhead, read time at N (1,000,000)
#   scripts/bench.sh attachments [MB]  a MB-sized blob (default 1024) saved, pushed and pulled;
#                                      1,000 100 KB attachments pulled vs cp; a mixed batch
#   scripts/bench.sh latency [MS ...]  1,000 100 KB attachments pulled through a proxy delaying
#                                      each way by MS (0 1 3): batched against one at a time
#   scripts/bench.sh scale [N ...]      import and pull at 100k and 1M (or the given N), then
#                                       the query benchmark at 1M (SCALE_QUERY_N overrides)
#   scripts/bench.sh answers [MB]      peak RSS of a serve answering big reads over two MB-sized
#                                      databases (default 1024: 50 MB and 100 KB documents)
#   scripts/bench.sh load [CLIENTS] [SECONDS]  many clients at once against a serve (200 for 60 s)
#   scripts/bench.sh kill [KILLS]      a serve killed (SIGKILL) during writes and replication (30)
#   scripts/bench.sh compaction [MB]   how long writes wait while a MB-sized database compacts
#   scripts/bench.sh couchdb [N ...]   replication with CouchDB and PouchDB (needs SYNCNODE_COUCHDB_URL,
#                                      an admin URL, and SYNCNODE_POUCHDB_DIR, as the interoperability tests)
#   scripts/bench.sh selective [N]     a selector matching 1% of N (100,000): a filtered pull against a pull
#                                      of just those documents, and CouchDB's selector replication from
#                                      CouchDB and from a node (needs SYNCNODE_COUCHDB_URL)
set -euo pipefail
cd "$(dirname "$0")/.."
# For the build only: SwiftPM otherwise rebuilds Hummingbird on every other build.
export SWIFT_DETERMINISTIC_HASHING=1
what="${1:-store}"
n="${2:-100000}"

bash scripts/setup.sh --tests
swift build -c release --static-swift-stdlib >/dev/null
bin="$(swift build -c release --static-swift-stdlib --show-bin-path)"

case "$what" in
  store)
    "$bin/SyncNodeBenchmarks" store "$n"
    python3 scripts/bench/scale.py "$bin" "$n"
    ;;
  scale)
    # The million-document set: whole-process import and pull at 100k and 1M (RSS flat
    # between them), then the query benchmark at 1M.
    shift || true
    sizes=("$@")
    [ ${#sizes[@]} -eq 0 ] && sizes=(100000 1000000)
    python3 scripts/bench/scale.py "$bin" "${sizes[@]}"
    "$bin/SyncNodeBenchmarks" query "${SCALE_QUERY_N:-1000000}"
    ;;
  listener|replication|mesh)
    # Logs go to a file, shown only when the benchmark fails.
    log="$(mktemp)"
    trap 'rm -f "$log"' EXIT
    default=$(case "$what" in listener) echo 20000 ;; mesh) echo 1000 ;; *) echo 10000 ;; esac)
    "$bin/SyncNodeBenchmarks" "$what" "${2:-$default}" 2>"$log" || { cat "$log" >&2; exit 1; }
    ;;
  couchdb)
    : "${SYNCNODE_COUCHDB_URL:?set SYNCNODE_COUCHDB_URL to a CouchDB admin URL, e.g. http://admin:secret@127.0.0.1:5984}"
    : "${SYNCNODE_POUCHDB_DIR:?set SYNCNODE_POUCHDB_DIR to a folder with load-pouchdb.js and PouchDB bundles per version}"
    shift || true
    python3 scripts/bench/couchdb.py "$bin" "$SYNCNODE_COUCHDB_URL" "$SYNCNODE_POUCHDB_DIR" "$@"
    ;;
  selective)
    : "${SYNCNODE_COUCHDB_URL:?set SYNCNODE_COUCHDB_URL to a CouchDB admin URL, e.g. http://admin:secret@127.0.0.1:5984}"
    python3 scripts/bench/selective.py "$bin" "$SYNCNODE_COUCHDB_URL" "$n"
    ;;
  query|codable)
    "$bin/SyncNodeBenchmarks" "$what" "$n"
    ;;
  digest)
    "$bin/SyncNodeBenchmarks" digest "${2:-1000000}"
    ;;
  answers)
    python3 scripts/bench/answers.py "$bin" "${2:-1024}"
    ;;
  load)
    python3 scripts/bench/load.py "$bin" "${2:-200}" "${3:-60}"
    ;;
  kill)
    python3 scripts/bench/kill.py "$bin" "${2:-30}"
    ;;
  compaction)
    python3 scripts/bench/compaction.py "$bin" "${2:-1024}"
    ;;
  latency)
    shift || true
    python3 scripts/bench/latency.py "$bin" "$@"
    ;;
  attachments)
    log="$(mktemp)"
    trap 'rm -f "$log"' EXIT
    "$bin/SyncNodeBenchmarks" attachments "${2:-1024}" 2>"$log" || { cat "$log" >&2; exit 1; }
    ;;
  *)
    echo "usage: scripts/bench.sh [store|listener|replication|query|codable|mesh] [N] | digest [N] | attachments [MB] | answers [MB] | load [CLIENTS] [SECONDS] | kill [KILLS] | compaction [MB] | latency [MS ...] | scale [N ...] | couchdb [N ...] | selective [N]" >&2
    exit 2
    ;;
esac
