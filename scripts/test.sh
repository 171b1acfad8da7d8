#!/usr/bin/env bash
# Sets up the machine and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
# For the build only (SwiftPM otherwise rebuilds Hummingbird on every other build); the test
# harness unsets it for the `syncnode serve` processes it starts (PythonClientTests.Node).
export SWIFT_DETERMINISTIC_HASHING=1

bash scripts/setup.sh --tests
if [ -z "${SYNCNODE_COUCHDB_URL:-}" ]; then
  echo "test: ******** SYNCNODE_COUCHDB_URL is not set: the CouchDB interoperability tests are SKIPPED (set it to an admin URL of a CouchDB 3.x, e.g. http://admin:secret@127.0.0.1:5984; .ci/run starts one) ********" >&2
fi
if [ -z "${SYNCNODE_COUCHDB_CLUSTER:-}" ]; then
  echo "test: ******** SYNCNODE_COUCHDB_CLUSTER is not set: the CouchDB-cluster hub tests are SKIPPED (.ci/run starts a 3-member cluster) ********" >&2
fi
if [ -z "${SYNCNODE_POUCHDB_DIR:-}" ]; then
  echo "test: ******** SYNCNODE_POUCHDB_DIR is not set: the PouchDB interoperability tests are SKIPPED (set it to a folder with load-pouchdb.js and PouchDB bundles per version) ********" >&2
fi
# Build everything first: some tests run the `syncnode` executable as a child process.
swift build --build-tests
# At most 24 tests at once (Swift Testing starts every test of the run otherwise). With all
# of them open, the test process held over 1,350 file descriptors, and Foundation's
# `Process.run()` on Linux (Swift 6.3) reads 256 bytes past each `/proc/self/fd` entry it
# lists: at that count the last one ends its read buffer, and a child's start crashed the
# whole run (SIGSEGV in `__memmove_avx_unaligned_erms`). At 24: about 900, and no slower.
export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH=${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-24}
if [ $# -gt 0 ]; then
  swift test --skip-build "$@"
else
  # Megabytes of attachments keep both cores busy in a debug build and would starve the tests
  # that wait within a deadline: their suites (LargeAttachment...) run on their own, after.
  swift test --skip-build --skip LargeAttachment
  swift test --skip-build --filter LargeAttachment
fi
# Every benchmark on a few documents (debug build: the figures mean nothing here, their self-checks do),
# so a benchmark that no longer runs is caught here and not at the next measurement.
if [ $# -eq 0 ]; then
  bin="$(swift build --show-bin-path)"; log="$(mktemp)"
  # (`attachments` moves over a gigabyte: too slow for a debug build, so not here.)
  for benchmark in store digest listener replication query codable mesh; do
    "$bin/SyncNodeBenchmarks" "$benchmark" 500 >/dev/null 2>"$log" \
      || { echo "test: benchmark '$benchmark' failed:" >&2; cat "$log" >&2; exit 1; }
  done
  echo "test: every benchmark ran on 500 documents"
  # What users run is a release build, which the optimizer compiles differently (a miscompiled
  # task-local once crashed release serves on every request while every debug test passed):
  # a release serve answers big reads, many clients and repeated SIGKILLs, at a small scale.
  # Linked as scripts/package.sh ships it (the Swift libraries statically), so the build is shared.
  swift build -c release --static-swift-stdlib
  release="$(swift build -c release --static-swift-stdlib --show-bin-path)"
  python3 scripts/bench/answers.py "$release" 60 >"$log" 2>&1 || { echo "test: the release answers check failed:" >&2; cat "$log" >&2; exit 1; }
  python3 scripts/bench/load.py "$release" 20 5 >"$log" 2>&1 && grep -q "verdict: met" "$log" \
    || { echo "test: the release load check failed:" >&2; cat "$log" >&2; exit 1; }
  python3 scripts/bench/kill.py "$release" 3 >"$log" 2>&1 && grep -q "verdict: met" "$log" \
    || { echo "test: the release kill check failed:" >&2; cat "$log" >&2; exit 1; }
  echo "test: a release serve answered big reads, 20 clients and 3 SIGKILLs"
  # The Debian package: built twice (the same bytes), then checked as a machine without Swift
  # uses it (its install and lab parts need root).
  bash scripts/package.sh
  deb="dist/syncnode_$(sh scripts/version.sh)_$(dpkg --print-architecture).deb"
  first=$(sha256sum < "$deb")
  bash scripts/package.sh >"$log" 2>&1 || { echo "test: the second package build failed:" >&2; cat "$log" >&2; exit 1; }
  [ "$(sha256sum < "$deb")" = "$first" ] || { echo "test: a second package built at this commit differs from the first" >&2; exit 1; }
  echo "test: a second package built at this commit has the same bytes"
  bash scripts/package-test.sh "$deb"
fi
# Discovery and sync across three hosts (network namespaces with their own avahi-daemon): needs root.
# Needs root with the power to make namespaces (an unprivileged container's root has not); not run for a filtered run.
if [ $# -gt 0 ]; then
  echo "test: the multi-node test (scripts/multinode-test.sh) is not run with test filters" >&2
elif [ "$(id -u)" -eq 0 ] && unshare --net --mount true 2>/dev/null; then
  bash scripts/multinode-test.sh
  # The example chat app on three hosts: the mesh library as an app uses it.
  bash scripts/mesh-chat-test.sh
  # The mesh's checks (convergence, churn without a lost write, agreement) on three hosts; the
  # figures mean nothing in a debug build (the 10-host run with figures: scripts/mesh-measure.sh).
  SYNCNODE_BIN="$(swift build --show-bin-path)/syncnode" bash scripts/mesh-measure.sh --hosts 3 --quick
  # docs/TESTING.md's example, as the page shows it: a partition healed, wait --in-sync, compare.
  diff <(sed -n '/^```bash$/,/^```$/p' docs/TESTING.md | sed '1d;$d') scripts/lab/partition-example.sh \
    || { echo "test: docs/TESTING.md no longer shows scripts/lab/partition-example.sh as it is" >&2; exit 1; }
  SYNCNODE_BIN="$(swift build --show-bin-path)/syncnode" bash scripts/lab/partition-example.sh > "$log" 2>&1 \
    && grep -q '{"count":2,"equal":true}' "$log" || { echo "test: docs/TESTING.md's example failed:" >&2; cat "$log" >&2; exit 1; }
  echo "test: docs/TESTING.md's example passed"
  # Two LANs meeting through the CouchDB cluster, a member killed -9 mid-way (skipped, loudly,
  # without the cluster .ci/run starts).
  bash scripts/hub-lab-test.sh
else
  echo "test: ******** SKIPPED the multi-node tests (scripts/multinode-test.sh, scripts/mesh-chat-test.sh, scripts/mesh-measure.sh, scripts/hub-lab-test.sh): they need root allowed to create network and mount namespaces ********" >&2
fi
