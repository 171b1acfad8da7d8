#!/usr/bin/env bash
# A LAN of N hosts on one Linux machine, for multi-node tests: each host is a
# network namespace on a shared bridge (10.77.0.I/24 on its eth0) with its own
# /run, host name, dbus-daemon and avahi-daemon. Needs root.
#
#   scripts/lab.sh up N [--lans 1,2/3,4]
#                                      start hosts 1..N (replaces a running lab); with --lans, each
#                                      group is a LAN of its own: the first on bridge snlab0 and 10.77.0.I/24,
#                                      the second on snlab1 and 10.78.0.I/24, and so on (unnamed hosts in the
#                                      first); no multicast and no route between them
#   scripts/lab.sh forward PORT...     every LAN reaches this machine's 127.0.0.1:PORT at its address .254
#                                      (10.77.0.254:PORT, 10.78.0.254:PORT...), through a gateway namespace
#                                      that forwards over Unix sockets: nothing listens on the machine's interfaces
#   scripts/lab.sh exec I CMD...       run CMD on host I (working directory kept)
#   scripts/lab.sh link I up|down      plug or unplug host I's cable
#   scripts/lab.sh avahi I stop|start  stop or start host I's avahi-daemon
#   scripts/lab.sh vanish I            kill everything on host I and unplug it (a host that died)
#   scripts/lab.sh restart I           a host that died comes back: everything on it killed, its
#                                      dbus and avahi-daemon started again, its cable plugged in
#   scripts/lab.sh partition 1,2/3,4   split the LAN: hosts in different groups reach each other no
#                                      more (neither unicast nor multicast); unnamed hosts stay in the first
#   scripts/lab.sh heal                every host back on its LAN
#   scripts/lab.sh status              hosts, addresses, daemons
#   scripts/lab.sh down                stop everything, remove the hosts
#
# State lives in $SYNCNODE_LAB (default /tmp/syncnode-lab); daemon logs in its host-I/ folders.
set -euo pipefail

LAB=${SYNCNODE_LAB:-/tmp/syncnode-lab}
BRIDGE=snlab0
GATEWAY=snlab-gw

die() { echo "lab: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (network namespaces, mounts)"
for tool in ip nsenter unshare dbus-daemon avahi-daemon; do
  command -v "$tool" >/dev/null || die "$tool is missing: run scripts/setup.sh"
done

ns() { echo "snlab-$1"; }
hostdir() { echo "$LAB/host-$1"; }
hosts() { ls -d "$LAB"/host-* 2>/dev/null | sed 's/.*host-//' | sort -n; }
lan_of() { cat "$(hostdir "$1")/lan" 2>/dev/null || echo 0; }
lans() { ls "$LAB"/lan-* 2>/dev/null | sed 's/.*lan-//' | sort -n; }
bridge_of_lan() { echo "snlab$1"; }
prefix_of_lan() { echo "10.$((77 + $1)).0"; }

# A process is alive unless gone or a zombie (PID 1 here may not reap promptly).
alive() {
  local state
  state=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
  [ "$state" != Z ]
}

enter() {
  local i=$1; shift
  local d; d=$(hostdir "$i")
  [ -e "$d/mnt" ] || die "no host $i (scripts/lab.sh up N first)"
  ${EXEC:-} nsenter --net="/run/netns/$(ns "$i")" --mount="$d/mnt" --uts="$d/uts" --wd="$PWD" -- "$@"
}

wait_for_log() {  # file, text, seconds
  local deadline=$((SECONDS + $3))
  until grep -q "$2" "$1" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || return 1
    sleep 0.05
  done
}

start_avahi() {
  local i=$1 d; d=$(hostdir "$i")
  if [ -f "$d/avahi.pid" ] && alive "$(cat "$d/avahi.pid")"; then return 0; fi
  rm -f "$d/run/avahi-daemon/pid"
  : > "$d/avahi.log"
  EXEC=exec enter "$i" setsid avahi-daemon -f "$d/avahi-daemon.conf" --no-chroot --no-rlimits >>"$d/avahi.log" 2>&1 < /dev/null &
  echo $! > "$d/avahi.pid"
  wait_for_log "$d/avahi.log" "Server startup complete" 10 || die "host $i: avahi-daemon did not start (see $d/avahi.log)"
}

stop_avahi() {
  local i=$1 d; d=$(hostdir "$i")
  [ -f "$d/avahi.pid" ] || return 0
  local pid; pid=$(cat "$d/avahi.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 50); do alive "$pid" || break; sleep 0.05; done
  kill -9 "$pid" 2>/dev/null || true
  rm -f "$d/avahi.pid" "$d/run/avahi-daemon/pid"
}

host_up() {  # I LAN
  local i=$1 lan=$2 d; d=$(hostdir "$i")
  mkdir -p "$d/run/dbus" "$d/services"
  echo "$lan" > "$d/lan"
  ip netns add "$(ns "$i")"
  ip link add "snveth$i" type veth peer name eth0 netns "$(ns "$i")"
  ip link set "snveth$i" master "$(bridge_of_lan "$lan")" up
  ip netns exec "$(ns "$i")" ip addr add "$(prefix_of_lan "$lan").$i/24" dev eth0
  ip netns exec "$(ns "$i")" ip link set eth0 up multicast on
  ip netns exec "$(ns "$i")" ip link set lo up

  # A persistent mount + UTS namespace: private /run (avahi's pid file and socket
  # paths are fixed), no system services, the host's own name and /sys.
  touch "$d/mnt" "$d/uts"
  unshare --mount="$d/mnt" --uts="$d/uts" --propagation private sh -c "
    nsenter --net=/run/netns/$(ns "$i") mount -t sysfs sysfs /sys
    mount --bind '$d/run' /run
    mount --bind '$d/services' /etc/avahi/services
    hostname host-$i"

  cat > "$d/dbus.conf" <<EOF
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path=/run/dbus/system_bus_socket</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <allow own="*"/>
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
  </policy>
  <include ignore_missing="yes">/usr/share/dbus-1/system.d/avahi-dbus.conf</include>
</busconfig>
EOF
  cat > "$d/avahi-daemon.conf" <<EOF
[server]
host-name=host-$i
use-ipv4=yes
use-ipv6=no
allow-interfaces=eth0
ratelimit-interval-usec=1000000
ratelimit-burst=1000
[wide-area]
enable-wide-area=no
[publish]
publish-workstation=no
publish-hinfo=no
EOF
  start_daemons "$i"
}

start_daemons() {  # I: dbus-daemon, then avahi-daemon
  local i=$1 d; d=$(hostdir "$i")
  rm -f "$d/run/dbus/system_bus_socket"
  EXEC=exec enter "$i" setsid dbus-daemon --nofork --nopidfile --config-file="$d/dbus.conf" >"$d/dbus.log" 2>&1 < /dev/null &
  echo $! > "$d/dbus.pid"
  local deadline=$((SECONDS + 5))
  until [ -S "$d/run/dbus/system_bus_socket" ]; do
    [ $SECONDS -lt $deadline ] || die "host $i: dbus-daemon did not start (see $d/dbus.log)"
    sleep 0.02
  done
  start_avahi "$i"
}

host_down() {
  local i=$1 d; d=$(hostdir "$i")
  local n; n=$(ns "$i")
  if ip netns list | grep -qw "$n"; then
    for pid in $(ip netns pids "$n" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
  fi
  for f in avahi dbus; do
    [ -f "$d/$f.pid" ] && kill -9 "$(cat "$d/$f.pid")" 2>/dev/null || true
  done
  umount "$d/mnt" 2>/dev/null || true
  umount "$d/uts" 2>/dev/null || true
  ip link del "snveth$i" 2>/dev/null || true
  ip netns del "$n" 2>/dev/null || true
  rm -rf "$d"
}

lab_down() {
  heal
  for i in $(hosts); do host_down "$i"; done
  gateway_down
  for lan in $(lans); do ip link del "$(bridge_of_lan "$lan")" 2>/dev/null || true; rm -f "$LAB/lan-$lan"; done
  ip link del "$BRIDGE" 2>/dev/null || true
  if mountpoint -q "$LAB"; then umount "$LAB" 2>/dev/null || umount -l "$LAB" || true; fi
}

add_bridge() {
  ip link add "$1" type bridge
  echo 0 > "/sys/class/net/$1/bridge/multicast_snooping"
  ip link set "$1" up
}

lab_up() {  # N [--lans SPEC]
  local n=$1 spec=${3:-} lan i
  [[ "$n" =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up N: N must be 1..200"
  case "${2:-}" in
    "") ;;
    --lans) [[ "$spec" =~ ^[0-9]+(,[0-9]+)*(/[0-9]+(,[0-9]+)*)*$ ]] || die "up N --lans: write LANs as 1,2/3,4" ;;
    *) die "up N [--lans 1,2/3,4]" ;;
  esac
  declare -A host_lan=()
  IFS=/ read -r -a groups <<< "$spec"
  for lan in "${!groups[@]}"; do
    IFS=, read -r -a hosts_in <<< "${groups[$lan]}"
    for i in "${hosts_in[@]}"; do
      [ "$i" -ge 1 ] && [ "$i" -le "$n" ] || die "up $n --lans: there is no host $i"
      host_lan[$i]=$lan
    done
  done
  lab_down
  mkdir -p "$LAB"
  # unshare --mount=FILE needs FILE on a private mount.
  mount --bind "$LAB" "$LAB"
  mount --make-private "$LAB"
  for lan in $(seq 0 $(( ${#groups[@]} > 1 ? ${#groups[@]} - 1 : 0 ))); do
    touch "$LAB/lan-$lan"
    add_bridge "$(bridge_of_lan "$lan")"
  done
  for i in $(seq "$n"); do host_up "$i" "${host_lan[$i]:-0}"; done
  echo "lab: $n hosts up on $(lans | wc -l) LAN(s); enter one with: scripts/lab.sh exec I CMD" >&2
}

# The gateway: a namespace on every LAN at .254. Each forwarded port is a socat there that
# hands connections over a Unix socket to a socat on the machine, which connects to 127.0.0.1.
gateway_up() {
  ip netns list | grep -qw "$GATEWAY" && return 0
  ip netns add "$GATEWAY"
  ip netns exec "$GATEWAY" ip link set lo up
  local lan
  for lan in $(lans); do
    ip link add "snlabgw$lan" type veth peer name "lan$lan" netns "$GATEWAY"
    ip link set "snlabgw$lan" master "$(bridge_of_lan "$lan")" up
    ip netns exec "$GATEWAY" ip addr add "$(prefix_of_lan "$lan").254/24" dev "lan$lan"
    ip netns exec "$GATEWAY" ip link set "lan$lan" up
  done
  mkdir -p "$LAB/gateway"
}

gateway_down() {
  local f lan
  # Each socat leads its own session: its children (one per open connection) go with it.
  for f in "$LAB"/gateway/*.pid; do [ -f "$f" ] && kill -9 -- "-$(cat "$f")" 2>/dev/null || true; done
  if ip netns list | grep -qw "$GATEWAY"; then
    for f in $(ip netns pids "$GATEWAY" 2>/dev/null); do kill -9 "$f" 2>/dev/null || true; done
  fi
  for lan in $(lans); do ip link del "snlabgw$lan" 2>/dev/null || true; done
  ip netns del "$GATEWAY" 2>/dev/null || true
  rm -rf "$LAB/gateway"
}

forward() {  # PORT...
  [ -n "$(hosts)" ] || die "forward: no lab (scripts/lab.sh up N first)"
  command -v socat >/dev/null || die "socat is missing: run scripts/setup.sh --tests"
  gateway_up
  local port g=$LAB/gateway
  for port in "$@"; do
    [[ "$port" =~ ^[0-9]+$ ]] && [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "forward: $port is not a port"
    if [ -f "$g/$port.out.pid" ] && alive "$(cat "$g/$port.out.pid")" && [ -f "$g/$port.in.pid" ] && alive "$(cat "$g/$port.in.pid")"; then
      continue
    fi
    local side; for side in in out; do [ -f "$g/$port.$side.pid" ] && kill -9 -- "-$(cat "$g/$port.$side.pid")" 2>/dev/null || true; done
    rm -f "$g/$port.sock"
    setsid socat "UNIX-LISTEN:$g/$port.sock,fork" "TCP:127.0.0.1:$port" </dev/null >>"$g/socat.log" 2>&1 &
    echo $! > "$g/$port.out.pid"
    setsid ip netns exec "$GATEWAY" socat "TCP-LISTEN:$port,fork,reuseaddr" "UNIX-CONNECT:$g/$port.sock" </dev/null >>"$g/socat.log" 2>&1 &
    echo $! > "$g/$port.in.pid"
  done
  echo "lab: $* forwarded to each LAN's .254 address" >&2
}

# Each group of a partition is its own bridge: snlab0 for the first (and unnamed hosts), snlabpN after.
partition() {
  local spec=$1 group=0 i
  [[ "$spec" =~ ^[0-9]+(,[0-9]+)*(/[0-9]+(,[0-9]+)*)+$ ]] || die "partition: write groups as 1,2/3,4"
  [ "$(lans | wc -l)" -le 1 ] || die "partition: this lab has several LANs (up --lans); unplug hosts with 'link I down' instead"
  heal
  IFS=/ read -r -a groups <<< "$spec"
  for members in "${groups[@]}"; do
    local bridge=$BRIDGE
    if [ "$group" -gt 0 ]; then
      bridge="snlabp$group"
      add_bridge "$bridge"
    fi
    IFS=, read -r -a hosts_in <<< "$members"
    for i in "${hosts_in[@]}"; do
      [ -e "$(hostdir "$i")/mnt" ] || die "partition: no host $i"
      ip link set "snveth$i" master "$bridge"
    done
    group=$((group + 1))
  done
}

heal() {
  local i bridge
  for i in $(hosts); do ip link set "snveth$i" master "$(bridge_of_lan "$(lan_of "$i")")" 2>/dev/null || true; done
  for bridge in $(ip -o link show type bridge | awk -F': ' '{print $2}' | grep '^snlabp' || true); do ip link del "$bridge"; done
}

status() {
  [ -n "$(hosts)" ] || { echo "lab: no hosts"; return 0; }
  for i in $(hosts); do
    local d; d=$(hostdir "$i")
    local link avahi dbus
    link=$(cat "/sys/class/net/snveth$i/operstate" 2>/dev/null || echo missing)
    avahi=down; [ -f "$d/avahi.pid" ] && alive "$(cat "$d/avahi.pid")" && avahi=up
    dbus=down; [ -f "$d/dbus.pid" ] && alive "$(cat "$d/dbus.pid")" && dbus=up
    echo "host-$i $(prefix_of_lan "$(lan_of "$i")").$i link=$link dbus=$dbus avahi=$avahi"
  done
}

cmd=${1:-}
shift || true
case "$cmd" in
  up) lab_up "${1:?up N}" "${2:-}" "${3:-}" ;;
  forward) [ $# -gt 0 ] || die "forward PORT..."; forward "$@" ;;
  down) lab_down ;;
  # exec: the command replaces this script, so `$!` of a backgrounded `lab.sh exec` is the command's PID.
  exec) i=${1:?exec I CMD...}; shift; [ $# -gt 0 ] || die "exec I CMD..."; EXEC=exec enter "$i" "$@" ;;
  link) ip link set "snveth${1:?link I up|down}" "${2:?link I up|down}" ;;
  avahi)
    case "${2:-}" in
      stop) stop_avahi "$1" ;;
      start) start_avahi "$1" ;;
      *) die "avahi I stop|start" ;;
    esac ;;
  partition) partition "${1:?partition 1,2/3,4}" ;;
  heal) heal ;;
  restart)
    i=${1:?restart I}
    [ -e "$(hostdir "$i")/mnt" ] || die "no host $i"
    for pid in $(ip netns pids "$(ns "$i")"); do kill -9 "$pid" 2>/dev/null || true; done
    rm -f "$(hostdir "$i")/avahi.pid" "$(hostdir "$i")/dbus.pid"
    start_daemons "$i"
    ip link set "snveth$i" up ;;
  vanish)
    # Unplugged first, so no goodbye packet leaves: peers must notice on their own.
    i=${1:?vanish I}
    ip link set "snveth$i" down
    for pid in $(ip netns pids "$(ns "$i")"); do kill -9 "$pid" 2>/dev/null || true; done ;;
  status) status ;;
  *) sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
