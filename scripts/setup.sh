#!/usr/bin/env bash
# Installs what SyncNode needs on Debian 12 (idempotent; run as root or with sudo).
#   scripts/setup.sh           to build and run a node
#   scripts/setup.sh --package to build the Debian package too (scripts/package.sh)
#   scripts/setup.sh --tests   and to run the test suite and benchmarks (the package's checks included)
set -euo pipefail

# avahi, dbus, iproute2, util-linux: DNS-SD and the multi-host lab (scripts/lab.sh); curl: the multi-node test;
# zlib1g-dev: gzip-encoded attachments (CouchDB sends text ones so); libisal-dev: gzip between nodes
# (igzip); libssl-dev: SHA-256 for collection digests. Name `dbus` explicitly: dbus-broker alone lacks dbus-daemon.
packages=(libsqlite3-dev sqlite3 python3 libavahi-client-dev libqrencode-dev avahi-daemon avahi-utils dbus
          iproute2 util-linux curl zlib1g-dev libisal-dev libssl-dev)
tests=false
if [ "${1:-}" = "--package" ] || [ "${1:-}" = "--tests" ]; then
  # dpkg-dev: dpkg-shlibdeps (the package's Depends); binutils: strip and readelf; systemd:
  # systemd-analyze verifies the unit; adduser: the package's own dependency, to install it in tests.
  packages+=(dpkg-dev binutils systemd adduser)
fi
if [ "${1:-}" = "--tests" ]; then
  tests=true
  # zbar-tools: the QR tests' scanner; nodejs, chromium: PouchDB in Node.js and in a browser page;
  # python3-venv: the Python clients below; socat: the lab's gateway to the CouchDB cluster (lab.sh forward).
  packages+=(python3-venv zbar-tools nodejs chromium socat)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

command -v swift >/dev/null || { echo "setup: the Swift toolchain (6.1 or later) must be on PATH" >&2; exit 1; }

# Independent CouchDB clients from PyPI for the interoperability tests, in the repo's own venv
# (Playwright drives Debian's chromium; it downloads no browser).
if $tests; then
  venv="$(cd "$(dirname "$0")/.." && pwd)/.venv"
  if ! "$venv/bin/python" -c "import couchdb, pycouchdb, aiocouch, sofa, zeroconf, playwright, prometheus_client" 2>/dev/null; then
    echo "setup: installing Python test clients into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --disable-pip-version-check "couchdb==1.2" "pycouchdb" "typing_extensions" "aiocouch" "django-sofa==0.2.1" "django>=4.2,<5.1" "djangorestframework>=3.14,<3.16" "zeroconf" "playwright" "prometheus_client"
  fi
fi
echo "setup: ok" >&2
