#!/usr/bin/env bash
# The example chat (Examples/Chat, `syncnode-chat`) on three lab hosts (scripts/lab.sh): each
# node finds the other two through DNS-SD, trusts them on first sight, shows who is here, and a
# line typed on each host reaches the other two. Then each chat ends on end of input, cleanly.
#
#   scripts/mesh-chat-test.sh
#
# Needs root; without it, says so and exits 0 (scripts/test.sh reports the skip).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" -ne 0 ]; then
  echo "mesh-chat: SKIPPED: needs root (network namespaces, per-host avahi-daemon)" >&2
  exit 0
fi
BIN=${SYNCNODE_CHAT_BIN:-$(swift build --show-bin-path)/syncnode-chat}
[ -x "$BIN" ] || { echo "mesh-chat: $BIN is missing: swift build first" >&2; exit 1; }
WORK=$(mktemp -d /tmp/syncnode-chat.XXXXXX)
export SYNCNODE_LAB="$WORK/lab"
LAB="bash scripts/lab.sh"
declare -A PID

say() { echo "mesh-chat: $*" >&2; }
cleanup() {
  local status=$?
  for p in "${PID[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  $LAB down >/dev/null 2>&1 || true
  if [ $status -ne 0 ]; then
    for i in 1 2 3; do
      [ -f "$WORK/out$i" ] && { echo "--- host $i stdout" >&2; tail -15 "$WORK/out$i" >&2; }
      [ -f "$WORK/err$i" ] && { echo "--- host $i stderr" >&2; tail -5 "$WORK/err$i" >&2; }
    done
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
fail() { say "FAIL: $*"; exit 1; }

# wait_until SECONDS COMMAND...: polls every 50 ms; false when the time runs out.
wait_until() {
  local deadline=$((SECONDS + $1)); shift
  until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.05; done
}
shows() { grep -qF -- "$2" "$WORK/out$1"; }

$LAB up 3
for i in 1 2 3; do
  mkfifo "$WORK/in$i"
  $LAB exec "$i" "$BIN" --dir "$WORK/c$i" --name "user-$i" < "$WORK/in$i" > "$WORK/out$i" 2> "$WORK/err$i" &
  PID[$i]=$!
done
# Hold each chat's input open (read-write: opening does not wait for the reader).
exec 7<>"$WORK/in1" 8<>"$WORK/in2" 9<>"$WORK/in3"

for i in 1 2 3; do
  wait_until 15 shows "$i" "* user-$i is online" || fail "chat $i did not start"
  for j in 1 2 3; do
    [ "$i" = "$j" ] || wait_until 20 shows "$i" "* user-$j is here" || fail "chat $i did not see user-$j arrive"
  done
done
say "ok: every chat sees the other two arrive (DNS-SD, trust on first use)"

echo "hello from host 1" >&7
echo "hello from host 2" >&8
echo "hello from host 3" >&9
for i in 1 2 3; do
  for j in 1 2 3; do
    [ "$i" = "$j" ] || wait_until 20 shows "$i" "<user-$j> hello from host $j" || fail "chat $i did not get the message from host $j"
  done
done
say "ok: a line typed on each host reached the other two"

exec 9>&-   # end of input on host 3: it stops
wait "${PID[3]}" || fail "chat 3 did not exit cleanly"
unset 'PID[3]'
wait_until 20 shows 1 "* user-3 left" || fail "chat 1 did not see user-3 leave"
exec 7>&- 8>&-
for i in 1 2; do wait "${PID[$i]}" || fail "chat $i did not exit cleanly"; unset "PID[$i]"; done
say "ok: a chat that ends is seen to leave; every chat exits cleanly"
say "passed"
