#!/usr/bin/env bash
# The CouchDB-cluster hub across two LANs: four lab hosts (scripts/lab.sh) on two LANs with no
# multicast and no route between them (hosts 1,2 and 3,4), each LAN reaching the cluster's
# members through the lab's gateway. Each node runs `syncnode serve --auto-sync` with every
# member as a hub (`--hub`, the credentials in a file), pairs with its LAN peer by invitation,
# and meets the other LAN only through the cluster. scripts/lab/hub_lab.py then times writes to
# the other LAN, writes on every node with conflicts made on both LANs, kills -9 the member every
# node is using mid-way, and checks that every node and the cluster end with the same (id,
# winning rev) set holding every acknowledged write, on the checkpoints they had.
#
#   scripts/hub-lab-test.sh
#
# Needs root and a cluster: SYNCNODE_COUCHDB_CLUSTER (member URLs, space-separated),
# SYNCNODE_COUCHDB_CLUSTER_DIR and SYNCNODE_COUCHDB_CLUSTER_RESTART, as .ci/run sets them.
# Without them it says so and exits 0; the killed member is started again at the end.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { echo "hub-lab: $*" >&2; }
if [ "$(id -u)" -ne 0 ]; then
  say "SKIPPED: needs root (network namespaces, per-host avahi-daemon)"; exit 0
fi
if [ -z "${SYNCNODE_COUCHDB_CLUSTER:-}" ] || [ -z "${SYNCNODE_COUCHDB_CLUSTER_DIR:-}" ] || [ -z "${SYNCNODE_COUCHDB_CLUSTER_RESTART:-}" ]; then
  say "******** SKIPPED: SYNCNODE_COUCHDB_CLUSTER, _DIR and _RESTART are not all set (.ci/run starts a 3-member cluster) ********"; exit 0
fi

BIN=${SYNCNODE_BIN:-$(swift build --show-bin-path)/syncnode}
[ -x "$BIN" ] || { say "$BIN is missing: swift build first"; exit 1; }
PY=.venv/bin/python
WORK=$(mktemp -d /tmp/syncnode-hub-lab.XXXXXX)
export SYNCNODE_LAB="$WORK/lab"
LAB="bash scripts/lab.sh"
DB="hublab-$(head -c 4 /dev/urandom | od -An -tx1 | tr -d ' \n')"
read -r -a MEMBERS <<< "$SYNCNODE_COUCHDB_CLUSTER"
[ ${#MEMBERS[@]} -ge 2 ] || { say "SYNCNODE_COUCHDB_CLUSTER names ${#MEMBERS[@]} member: failover needs two"; exit 1; }
declare -A PID PORT INVITE

fail() { say "FAIL: $*"; exit 1; }
cleanup() {
  local status=$?
  for p in "${PID[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  $LAB down >/dev/null 2>&1 || true
  # The killed member comes back (through Python, which closes the descriptors a daemon would keep).
  python3 -c 'import subprocess, sys; subprocess.run(sys.argv[1], shell=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)' \
    "$SYNCNODE_COUCHDB_CLUSTER_RESTART" || true
  curl -s -m 30 -X DELETE "${MEMBERS[1]}/$DB" >/dev/null || true
  if [ $status -ne 0 ]; then
    for f in "$WORK"/err*; do
      [ -f "$f" ] && { echo "--- $f (last 25)" >&2; tail -25 "$f" >&2; }
    done
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT

wait_until() {  # SECONDS COMMAND...
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt "$deadline" ] || return 1; sleep 0.05; done
}

# Member URLs as the lab sees them: each LAN reaches 127.0.0.1:PORT at its gateway, .254.
ports=(); for url in "${MEMBERS[@]}"; do ports+=("${url##*:}"); done
credentials=$(sed -nE 's#^https?://([^@/]+:[^@/]*)@.*#\1#p' <<< "${MEMBERS[0]}")
[ -n "$credentials" ] || { say "SYNCNODE_COUCHDB_CLUSTER's members need a server admin's USER:PASSWORD in their URLs"; exit 1; }
umask 077; echo "$credentials" > "$WORK/hub-credentials"; umask 022
hubs_for() {  # LAN number: --hub options, the members in the order every node uses them
  local p; for p in "${ports[@]}"; do printf -- '--hub http://10.%d.0.254:%s ' $((77 + $1 - 1)) "$p"; done
}

say "two LANs of two hosts (1,2 and 3,4), the cluster's ${#ports[@]} members forwarded to both"
$LAB up 4 --lans 1,2/3,4
$LAB forward "${ports[@]}"

start_node() {  # I LAN
  local i=$1 lan=$2
  # shellcheck disable=SC2046
  $LAB exec "$i" env -u SWIFT_DETERMINISTIC_HASHING "$BIN" --dir "$WORK/n$i" serve --db "$DB" --name "node-$i" --auto-sync \
    --qr none $(hubs_for "$lan") --hub-credentials "$WORK/hub-credentials" > "$WORK/out$i" 2> "$WORK/err$i" &
  PID[$i]=$!
  disown "${PID[$i]}"   # killed at the end without a "Killed" line from bash
  wait_until 20 grep -qs "listening on" "$WORK/out$i" || fail "node $i did not start: $(tail -3 "$WORK/err$i")"
  PORT[$i]=$(sed -n 's/.*listening on https:\/\/[^/]*:\([0-9][0-9]*\)\/.*/\1/p' "$WORK/out$i" | tail -1)
  INVITE[$i]=$(sed -n 's/.*listening on \(https:.*\)/\1/p' "$WORK/out$i" | tail -1)
}
for i in 1 2; do start_node "$i" 1; done
for i in 3 4; do start_node "$i" 2; done
for pair in "2 1" "4 3"; do
  set -- $pair
  $LAB exec "$1" "$BIN" --dir "$WORK/n$1" pair "${INVITE[$2]}" > "$WORK/pair$1" 2>&1 || fail "node $1 could not pair with node $2: $(cat "$WORK/pair$1")"
done

spec() {  # I: HOST:PORT:USER:PASSWORD of node I as the gateway reaches it
  local lan=77; [ "$1" -gt 2 ] && lan=78
  $PY -c 'import json, sys; c = json.load(open(sys.argv[1])); print(":".join(sys.argv[2:] + [c["user"], c["password"]]))' \
    "$WORK/n$1/.node/credential.json" "10.$lan.0.$1" "${PORT[$1]}"
}
members=$(for p in "${ports[@]}"; do printf '127.0.0.1:%s:%s,' "$p" "$credentials"; done)
say "the nodes run; the test drives them from the gateway"
ip netns exec snlab-gw $PY scripts/lab/hub_lab.py "$DB" "$(spec 1),$(spec 2)" "$(spec 3),$(spec 4)" "${members%,}" \
  "$SYNCNODE_COUCHDB_CLUSTER_DIR/member-1/couchdb.pid" 12 | tee "$WORK/figures" >&2 || fail "see above"
# Nothing a node printed carries the cluster's password.
password=${credentials#*:}
grep -qF -- "$password" "$WORK"/out* "$WORK"/err* && fail "a node printed the cluster's password"
say "ok: two LANs met through the cluster, one member killed -9 mid-way: every acknowledged write everywhere, the same winners"
