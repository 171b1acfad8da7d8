#!/usr/bin/env bash
# Checks the Debian package of scripts/package.sh as a machine without Swift would use it:
#   - its fields (version, architecture, Depends on each library the binary links) and its files;
#   - ldd: only Debian libraries, none of the Swift toolchain's;
#   - the binary prints its version, serves, answers and stops on SIGTERM with the toolchain
#     hidden (a mount namespace with an empty tmpfs over it), and its lines carry the journal's
#     priorities when stderr is the journal;
# and, as root allowed to make namespaces:
#   - installed with dpkg: the user syncnode and /var/lib/syncnode (0700) exist;
#     `systemd-analyze verify` accepts the unit; the unit's command, run as the unit runs it (user
#     syncnode, no new privileges, no capabilities, a read-only system but its state directory),
#     serves; reinstalling keeps data and identity; remove keeps the data; purge deletes it
#     (skipped when a syncnode package is installed already: this machine's own is left alone);
#   - two lab hosts (scripts/lab.sh) running only the packaged binary pair by URL and sync.
#
#   scripts/package-test.sh dist/syncnode_VERSION_ARCH.deb
set -euo pipefail
cd "$(dirname "$0")/.."
deb=${1:?usage: scripts/package-test.sh DEB}
[ -f "$deb" ] || { echo "package-test: no $deb (scripts/package.sh makes it)" >&2; exit 1; }
deb=$(readlink -f "$deb")
work=$(mktemp -d /tmp/syncnode-package-test.XXXXXX)
export SYNCNODE_LAB="$work/lab"
pids=()
installed=false
cleanup() {
  local status=$?
  for p in "${pids[@]:-}"; do [ -n "$p" ] && { kill -9 "$p"; wait "$p"; } 2>/dev/null || true; done
  [ -d "$SYNCNODE_LAB" ] && bash scripts/lab.sh down >/dev/null 2>&1 || true
  $installed && { dpkg --purge syncnode >/dev/null 2>&1 || true; }
  if [ $status -ne 0 ]; then
    for f in "$work"/*.out "$work"/*.err; do [ -s "$f" ] && { echo "--- $f (last 15)" >&2; tail -15 "$f" >&2; }; done
  fi
  rm -rf "$work"
}
trap cleanup EXIT
say() { echo "package-test: $*" >&2; }
fail() { say "FAIL: $*"; exit 1; }
wait_for() {  # SECONDS FILE TEXT
  local deadline=$((SECONDS + $1))
  until grep -q -- "$3" "$2" 2>/dev/null; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.02; done
}

# --- Fields and files.
version=$(sh scripts/version.sh)
[ "$(dpkg-deb -f "$deb" Package)" = syncnode ] || fail "Package is not syncnode"
[ "$(dpkg-deb -f "$deb" Version)" = "$version" ] || fail "Version is $(dpkg-deb -f "$deb" Version), the tree's $version"
[ "$(dpkg-deb -f "$deb" Architecture)" = "$(dpkg --print-architecture)" ] || fail "wrong Architecture"
depends=$(dpkg-deb -f "$deb" Depends)
for p in libavahi-client3 libsqlite3-0 libqrencode4 zlib1g libisal2 libssl3 libc6; do
  grep -Eq "(^|, )$p \(>= [^)]+\)" <<< "$depends" || fail "Depends lacks $p with a version: $depends"
done
files=$(dpkg-deb -c "$deb" | awk '{print $6}')
for f in ./usr/bin/syncnode ./usr/share/man/man1/syncnode.1.gz ./lib/systemd/system/syncnode.service ./etc/default/syncnode \
         ./usr/share/bash-completion/completions/syncnode ./usr/share/zsh/vendor-completions/_syncnode \
         ./usr/share/fish/vendor_completions.d/syncnode.fish; do
  grep -qx -- "$f" <<< "$files" || fail "the package lacks $f"
done
[ "$(dpkg-deb -I "$deb" conffiles)" = /etc/default/syncnode ] || fail "/etc/default/syncnode is not a conffile"
root="$work/root"
dpkg-deb -x "$deb" "$root"
bin="$root/usr/bin/syncnode"
zcat "$root/usr/share/man/man1/syncnode.1.gz" | grep -q '^\.It Em serve' || fail "the man page does not describe serve"
grep -q 'serve' "$root/usr/share/bash-completion/completions/syncnode" || fail "the bash completion does not know serve"
say "ok: fields (Depends: $depends) and files"

# --- Libraries: Debian's only, each one's package in Depends.
toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
case "$toolchain" in /|/usr|/usr/local) fail "the toolchain is installed in $toolchain, among Debian's files: it cannot be hidden" ;; esac
libs=$(ldd "$bin")
grep -q "not found" <<< "$libs" && fail "unresolved libraries: $libs"
grep -q "$toolchain" <<< "$libs" && fail "the binary links the toolchain's libraries ($toolchain): $libs"
for lib in $(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
  [[ "$lib" == ld-linux* ]] && continue
  path=$(awk -v l="$lib" '$1 == l {print $3}' <<< "$libs")
  owner=$(dpkg -S "$(readlink -f "$path")" 2>/dev/null || dpkg -S "$path") || fail "$lib ($path) belongs to no Debian package"
  owner=${owner%%:*}
  tr ',' '\n' <<< "$depends" | sed 's/^ *//; s/ .*//' | grep -qxF "$owner" || fail "$lib comes from $owner, which Depends lacks"
done
say "ok: ldd shows Debian's libraries only ($(readelf -d "$bin" | grep -c NEEDED) linked), none from $toolchain"

# --- The binary with the toolchain hidden: version, serve, a write, SIGTERM.
# A command prefix (an array, so that `$!` of a background run is the node's PID): the command
# runs where the toolchain's directory is an empty tmpfs.
hidden=(unshare --mount --propagation private sh -c 'mount -t tmpfs none "$0" && exec "$@"' "$toolchain")
if [ "$(id -u)" -eq 0 ] && unshare --mount true 2>/dev/null; then
  "${hidden[@]}" sh -c "! ls '$toolchain/usr/bin' >/dev/null 2>&1" || fail "the toolchain is still visible in the namespace"
  run=("${hidden[@]}"); where="with $toolchain hidden"
else
  say "******** the toolchain is not hidden (needs root allowed to make mount namespaces): the binary runs beside it ********"
  run=(env); where="beside the toolchain"
fi
[ "$("${run[@]}" "$bin" --version)" = "$version" ] || fail "--version does not say $version"
node="$work/node"
starts=()
for attempt in 1 2 3 4 5; do
  rm -rf "$node"; : > "$work/serve.out"; : > "$work/serve.err"
  # $JOURNAL_STREAM names stderr's file as systemd names the journal's stream.
  begin=$EPOCHREALTIME
  JOURNAL_STREAM=$(stat -c '%d:%i' "$work/serve.err") "${run[@]}" "$bin" --dir "$node" serve --host 127.0.0.1 --no-advertise --no-browse \
    > "$work/serve.out" 2>> "$work/serve.err" &
  pid=$!; pids+=("$pid")
  wait_for 20 "$work/serve.out" "listening on" || fail "the packaged serve did not start $where"
  starts+=("$(awk -v a="$begin" -v b="$EPOCHREALTIME" 'BEGIN { printf "%d", (b - a) * 1000 }')")
  [ "$attempt" -lt 5 ] && { kill -TERM "$pid"; wait "$pid" || fail "serve exited $? on SIGTERM"; }
done
start_ms=$(printf '%s\n' "${starts[@]}" | sort -n | sed -n 3p)
grep -q '^<5>syncnode: listening on https://' "$work/serve.out" || fail "the listening line has no notice priority: $(head -1 "$work/serve.out")"
grep -q '^<6>syncnode: invitation' "$work/serve.err" || fail "the audit line has no info priority"
grep -v '^<[0-7]>' "$work/serve.err" | grep -q . && fail "stderr lines without a priority: $(grep -v '^<[0-7]>' "$work/serve.err" | head -3)"
grep -q '█\|▀\|▄' "$work/serve.out" && fail "QR art was drawn on a stdout that is not a terminal"
port=$(sed -n 's/.*listening on https:\/\/[^/]*:\([0-9]*\)\/.*/\1/p' "$work/serve.out")
auth=$("${run[@]}" "$bin" --dir "$node" credential --basic)
curl -sfk -u "$auth" -X PUT -H 'Content-Type: application/json' -d '{"from":"curl"}' "https://127.0.0.1:$port/default/packaged" >/dev/null \
  || fail "the packaged serve refused a write"
"${run[@]}" "$bin" --dir "$node" get default packaged | grep -q '"from":"curl"' || fail "the CLI did not read the write"
kill -TERM "$pid"; wait "$pid" || fail "serve exited $? on SIGTERM"
size=$(du -h "$deb" | cut -f1); binsize=$(du -h "$bin" | cut -f1)
say "ok: $where, the binary ($binsize; package $size) started listening in ${start_ms} ms (median of 5), answered, and stopped 0 on SIGTERM; lines carry journal priorities"

if [ "$(id -u)" -ne 0 ] || ! unshare --net --mount true 2>/dev/null; then
  say "******** SKIPPED installing the package and the lab hosts: they need root allowed to make namespaces ********"
  exit 0
fi

# --- Installed with dpkg, the unit's command run as the unit runs it, upgrade, remove, purge.
if dpkg-query -W -f='${Status}' syncnode 2>/dev/null | grep -q "install ok installed"; then
  say "******** SKIPPED the install check: a syncnode package is installed on this machine already ********"
else
  installed=true
  dpkg -i "$deb" > "$work/dpkg.out" 2>&1 || fail "dpkg -i failed: $(cat "$work/dpkg.out")"
  id syncnode >/dev/null || fail "no user syncnode after installing"
  [ "$(stat -c '%U %a' /var/lib/syncnode)" = "syncnode 700" ] || fail "/var/lib/syncnode is $(stat -c '%U %a' /var/lib/syncnode)"
  # It warns of an unknown key, a bad value or a missing binary, and still exits 0: any word fails.
  systemd-analyze verify --man=no /lib/systemd/system/syncnode.service > "$work/verify.out" 2>&1 && [ ! -s "$work/verify.out" ] \
    || fail "systemd-analyze verify: $(cat "$work/verify.out")"
  command=$(sed -n 's/^ExecStart=//p' /lib/systemd/system/syncnode.service)
  # As the unit: its user, no new privileges, no capabilities, everything read-only but the
  # state directory, its environment file, the toolchain hidden.
  as_unit=(unshare --mount --propagation private sh -c '
      mount --bind -o ro / /mnt && mount -t tmpfs none "/mnt$0" && mount --bind /var/lib/syncnode /mnt/var/lib/syncnode &&
      mount --rbind /proc /mnt/proc && mount --rbind /dev /mnt/dev && mount -t tmpfs none /mnt/tmp &&
      exec chroot /mnt setpriv --reuid=syncnode --regid=syncnode --init-groups --no-new-privs --bounding-set=-all --inh-caps=-all \
        sh -c "set -a; . /etc/default/syncnode; set +a; exec $1"' "$toolchain")
  : > "$work/unit.out"
  "${as_unit[@]}" "$command --host 127.0.0.1 --no-advertise" > "$work/unit.out" 2> "$work/unit.err" &
  pid=$!; pids+=("$pid")
  wait_for 20 "$work/unit.out" "listening on https://127.0.0.1:7984/" || fail "the unit's command did not serve on port 7984"
  "${as_unit[@]}" "syncnode --dir /var/lib/syncnode put default kept '{\"n\":1}'" >/dev/null || fail "a write as syncnode failed"
  kill -TERM "$pid"; wait "$pid" || fail "the unit's command exited $? on SIGTERM"
  uuid=$(cat /var/lib/syncnode/.node/uuid)
  dpkg -i "$deb" > "$work/dpkg.out" 2>&1 || fail "reinstalling failed: $(cat "$work/dpkg.out")"
  [ "$(cat /var/lib/syncnode/.node/uuid)" = "$uuid" ] || fail "reinstalling changed the node's identity"
  "${as_unit[@]}" "syncnode --dir /var/lib/syncnode get default kept" | grep -q '"n":1' || fail "reinstalling lost the data"
  dpkg --remove syncnode > "$work/dpkg.out" 2>&1 || fail "dpkg --remove failed: $(cat "$work/dpkg.out")"
  [ ! -e /usr/bin/syncnode ] || fail "the binary stayed after remove"
  [ "$(cat /var/lib/syncnode/.node/uuid 2>/dev/null)" = "$uuid" ] || fail "remove deleted the node's data"
  dpkg --purge syncnode > "$work/dpkg.out" 2>&1 || fail "dpkg --purge failed: $(cat "$work/dpkg.out")"
  installed=false
  [ ! -e /var/lib/syncnode ] && [ ! -e /etc/default/syncnode ] || fail "purge left /var/lib/syncnode or /etc/default/syncnode"
  say "ok: dpkg installed it (user syncnode, /var/lib/syncnode 0700), systemd-analyze verify passed, the unit's command served as syncnode; reinstall kept data and identity, remove kept the data, purge deleted it"
fi

# --- Two lab hosts with the packaged binary only: pair by URL, sync both ways.
bash scripts/lab.sh up 2 >/dev/null 2>&1 || fail "the lab did not start"
on() { local i=$1; shift; bash scripts/lab.sh exec "$i" unshare --mount --propagation private sh -c 'mount -t tmpfs none "$0" && exec "$@"' "$toolchain" "$@"; }
for i in 1 2; do
  : > "$work/lab$i.out"
  on "$i" "$bin" --dir "$work/lab$i" serve --name "packaged-$i" > "$work/lab$i.out" 2> "$work/lab$i.err" &
  pids+=("$!")
  wait_for 20 "$work/lab$i.out" "listening on" || fail "host $i: the packaged serve did not start"
done
url=$(sed -n 's/.*listening on \(https:.*\)/\1/p' "$work/lab1.out" | head -1)
on 2 "$bin" --dir "$work/lab2" pair "$url" > "$work/pair.out" 2>&1 || fail "host 2 could not pair with host 1: $(cat "$work/pair.out")"
on 1 "$bin" --dir "$work/lab1" put default from-1 '{"host":1}' >/dev/null
on 2 "$bin" --dir "$work/lab2" put default from-2 '{"host":2}' >/dev/null
synced() { on 1 "$bin" --dir "$work/lab1" get default from-2 >/dev/null 2>&1 && on 2 "$bin" --dir "$work/lab2" get default from-1 >/dev/null 2>&1; }
deadline=$((SECONDS + 30))
until synced; do [ $SECONDS -lt $deadline ] || fail "the packaged nodes did not sync within 30 s"; sleep 0.2; done
say "ok: two lab hosts running only the packaged binary paired by URL and synced both ways"
