#!/usr/bin/env bash
# Starts the system D-Bus and avahi-daemon when they are not running, so a node
# can advertise itself and find peers (idempotent; root or sudo). With systemd
# it asks systemd; without it (containers, CI) it starts the daemons itself.
set -euo pipefail
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

if avahi-daemon --check 2>/dev/null; then
  exit 0
fi
if [ -d /run/systemd/system ]; then
  $SUDO systemctl start dbus avahi-daemon
  exit 0
fi
# A socket left by a killed bus does not answer: start a new bus then.
if ! dbus-send --system --dest=org.freedesktop.DBus --print-reply / org.freedesktop.DBus.Peer.Ping >/dev/null 2>&1; then
  $SUDO mkdir -p /run/dbus
  $SUDO rm -f /run/dbus/pid /run/dbus/system_bus_socket
  $SUDO dbus-daemon --system --fork
fi
$SUDO rm -f /run/avahi-daemon/pid
log=/var/log/syncnode-avahi-daemon.log
$SUDO sh -c ": > $log"   # a previous run's "startup complete" must not count
# In the foreground under setsid: -D would log to syslog, which such machines lack.
$SUDO sh -c "setsid avahi-daemon --no-rlimits > $log 2>&1 < /dev/null &"
for _ in $(seq 100); do
  grep -q "Server startup complete" "$log" 2>/dev/null && { echo "services: avahi-daemon started (log: $log)" >&2; exit 0; }
  sleep 0.1
done
echo "services: avahi-daemon did not start (see $log); the node will run without DNS-SD" >&2
exit 1
