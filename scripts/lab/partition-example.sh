#!/usr/bin/env bash
# Three nodes, a partition, writes on both sides, heal; wait until in sync, then compare.
set -euo pipefail
LAB="bash scripts/lab.sh"; BIN=${SYNCNODE_BIN:-syncnode}; D=$(mktemp -d)
export SYNCNODE_LAB=$D/lab; trap '$LAB down; rm -rf $D' EXIT
$LAB up 3
for i in 1 2 3; do   # a node per host; each prints its pairing URL on its first line
  $LAB exec $i "$BIN" --dir $D/n$i serve --name node-$i --auto-sync > $D/out$i 2> $D/err$i & disown
  until grep -q 'listening on' $D/out$i; do sleep 0.1; done
done
url=$(sed -n 's/.*listening on //p' $D/out1)
$LAB exec 2 "$BIN" --dir $D/n2 pair "$url" && $LAB exec 3 "$BIN" --dir $D/n3 pair "$url"
$LAB partition 1,2/3
$LAB exec 1 "$BIN" --dir $D/n1 put default left '{"written":"on host 1, cut off from host 3"}'
$LAB exec 3 "$BIN" --dir $D/n3 put default right '{"written":"on host 3, cut off from hosts 1 and 2"}'
$LAB heal
for i in 1 2 3; do $LAB exec $i "$BIN" --dir $D/n$i wait --in-sync --timeout 60s; done
"$BIN" compare $D/n2 $D/n3   # prints {"count":2,"equal":true}, or what differs (exit 1)
