#!/usr/bin/env bash
# Sets up the machine, builds `syncnode` (release) and runs a node on the
# embedded default database: `syncnode serve` until Ctrl-C / SIGTERM, with
# dbus and avahi-daemon started if needed so it advertises itself on the LAN.
# Without credentials the node makes its own admin credential (`syncnode credential` prints it)
# and prints an invitation, never a password, as its pairing URL (and QR code).
# Extra arguments go to `serve`, e.g. `SYNCNODE_PASSWORD=secret bash scripts/run.sh --user ann --port 6984`,
# or `bash scripts/run.sh --anonymous` for a node without authentication on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")/.."
# Deterministic hashing keeps SwiftPM from rebuilding Hummingbird on every other build; it is
# for the build only: the node must hash with a per-process seed (peers choose its dictionary
# keys, and a fixed seed invites collision floods), so it is unset for `serve` below.
export SWIFT_DETERMINISTIC_HASHING=1

bash scripts/setup.sh
bash scripts/services.sh || echo "run: DNS-SD services unavailable; the node runs without discovery" >&2
swift build -c release --static-swift-stdlib --product syncnode
bin="$(swift build -c release --static-swift-stdlib --show-bin-path)/syncnode"
export SYNCNODE_DIR="${SYNCNODE_DIR:-$PWD/syncnode-data}"
exec env -u SWIFT_DETERMINISTIC_HASHING "$bin" serve "$@"
