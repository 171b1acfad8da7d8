#!/usr/bin/env bash
# Sets up the machine, builds `syncnode` and runs a node's main job on the
# embedded default database. Until `syncnode serve` exists this is a store
# demo: it writes, reads, updates and deletes documents and prints the changes feed.
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_DETERMINISTIC_HASHING=1

bash scripts/setup.sh
swift build -c release --product syncnode
bin="$(swift build -c release --show-bin-path)/syncnode"
export SYNCNODE_DIR="${SYNCNODE_DIR:-$PWD/syncnode-data}"

set -x
"$bin" put default greeting '{"text":"hello","lang":"en"}'
"$bin" get default greeting
"$bin" put default greeting '{"text":"hello, world","lang":"en"}'
printf '{"_id":"task-%d","title":"task %d","done":false}\n' 1 1 2 2 3 3 | "$bin" import default.work.tasks -
"$bin" export default.work.tasks
"$bin" delete default.work.tasks task-2
"$bin" changes default.work.tasks
"$bin" changes default
