#!/usr/bin/env bash
# Builds what installs `syncnode` on machines without Swift, from a release build that links the
# Swift standard library and Foundation statically (the binary needs Debian's libraries only):
#   dist/syncnode_<version>_<arch>.deb               /usr/bin/syncnode, its man page and shell
#                                                    completions, syncnode.service, /etc/default/syncnode
#   dist/syncnode-<version>-linux-<arch>.tar.gz      the same files, for other distributions
# Building twice at one commit gives the same bytes: every timestamp is the commit's.
# The man page is generated from the CLI's own help by argument-parser's plugin, which builds
# the package in debug (as `scripts/test.sh` does). Version: scripts/version.sh.
#
#   scripts/package.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export SWIFT_DETERMINISTIC_HASHING=1
umask 022

bash scripts/setup.sh --package
version=$(sh scripts/version.sh)
arch=$(dpkg --print-architecture)
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || stat -c %Y VERSION)}
day=$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)

echo "package: building syncnode $version (release, Swift libraries linked statically)" >&2
swift build -c release --static-swift-stdlib --product syncnode
bin="$(swift build -c release --static-swift-stdlib --show-bin-path)/syncnode"
built=$("$bin" --version)
[ "$built" = "$version" ] || { echo "package: the binary says $built, the tree $version" >&2; exit 1; }
echo "package: generating the man page from the CLI's help" >&2
swift package generate-manual --configuration debug --date "$day" --authors "The SyncNode developers" >/dev/null
manual=.build/plugins/GenerateManual/outputs/syncnode/syncnode.1

work=$(mktemp -d /tmp/syncnode-package.XXXXXX)
trap 'rm -rf "$work"' EXIT
root="$work/root"
install -d "$root/DEBIAN" "$root/usr/bin" "$root/usr/share/man/man1" "$root/usr/share/doc/syncnode" \
  "$root/usr/share/bash-completion/completions" "$root/usr/share/zsh/vendor-completions" \
  "$root/usr/share/fish/vendor_completions.d" "$root/lib/systemd/system" "$root/etc/default"
# Debug symbols and unneeded symbols go: 205 MB becomes about 95 MB.
strip --strip-unneeded -o "$root/usr/bin/syncnode" "$bin"
chmod 0755 "$root/usr/bin/syncnode"
gzip -9n < "$manual" > "$root/usr/share/man/man1/syncnode.1.gz"
gzip -9n < README.md > "$root/usr/share/doc/syncnode/README.md.gz"
# The reference the guide points to (CLI, HTTP API, security, limits, operating).
for page in CLI HTTP-API SECURITY LIMITS OPERATING; do
  gzip -9n < "docs/$page.md" > "$root/usr/share/doc/syncnode/$page.md.gz"
done
"$bin" --generate-completion-script bash > "$root/usr/share/bash-completion/completions/syncnode"
"$bin" --generate-completion-script zsh > "$root/usr/share/zsh/vendor-completions/_syncnode"
"$bin" --generate-completion-script fish > "$root/usr/share/fish/vendor_completions.d/syncnode.fish"
install -m 0644 packaging/syncnode.service "$root/lib/systemd/system/syncnode.service"
install -m 0644 packaging/syncnode.default "$root/etc/default/syncnode"
install -m 0644 packaging/debian/conffiles "$root/DEBIAN/conffiles"
install -m 0755 packaging/debian/postinst packaging/debian/prerm packaging/debian/postrm "$root/DEBIAN/"

# Depends: the package of each library the binary links, at the version its symbols need.
mkdir -p "$work/debian"
printf 'Source: syncnode\n\nPackage: syncnode\nArchitecture: any\n' > "$work/debian/control"
shlibs=$(cd "$work" && dpkg-shlibdeps -O -e root/usr/bin/syncnode 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$shlibs" ] || { echo "package: dpkg-shlibdeps found no libraries" >&2; exit 1; }
size=$(du -sk --exclude=DEBIAN "$root" | cut -f1)
cat > "$root/DEBIAN/control" <<CONTROL
Package: syncnode
Version: $version
Architecture: $arch
Maintainer: The SyncNode developers <syncnode@localhost>
Installed-Size: $size
Depends: $shlibs, adduser
Recommends: avahi-daemon
Section: database
Priority: optional
Description: embedded document database node with CouchDB-protocol LAN sync
 A SyncNode node keeps JSON document databases in SQLite and serves them over
 HTTPS with the Apache CouchDB replication protocol, so nodes, CouchDB and
 PouchDB replicate with it both ways. Nodes find each other on the LAN with
 DNS-SD (avahi) and pair by an invitation URL or QR code, with no shared
 password. syncnode.service runs a node on /var/lib/syncnode.
CONTROL

find "$root" -exec touch -h -d "@$SOURCE_DATE_EPOCH" {} +
mkdir -p dist
deb="dist/syncnode_${version}_${arch}.deb"
tarball="dist/syncnode-${version}-linux-${arch}.tar.gz"
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
top="syncnode-${version}-linux-${arch}"
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$SOURCE_DATE_EPOCH" \
  --transform "s,^,$top/," --exclude=./DEBIAN -C "$root" -cf - . | gzip -9n > "$tarball"
echo "package: $deb ($(du -h "$deb" | cut -f1)) and $tarball ($(du -h "$tarball" | cut -f1)); Depends: $shlibs, adduser" >&2
