#!/bin/sh
# The version of this source tree: the VERSION file, and for a build from git the number of
# commits and the commit (0.9.0+432.g82696c4; ".dirty" with uncommitted changes), so versions
# sort in commit order, as Debian compares them. $SYNCNODE_VERSION, when set, is taken as is.
#
#   scripts/version.sh                  prints it
#   scripts/version.sh --swift FILE     writes it as Swift source to FILE, only when it changed
#                                       (the build plugin Plugins/VersionStamp runs this)
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
version=${SYNCNODE_VERSION:-}
if [ -z "$version" ]; then
  version=$(cat "$root/VERSION")
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    version="$version+$(git -C "$root" rev-list --count HEAD).g$(git -C "$root" rev-parse --short=7 HEAD)"
    git -C "$root" diff --quiet HEAD -- 2>/dev/null || version="$version.dirty"
  fi
fi
case "$version" in
  [0-9]*) ;;
  *) echo "version: '$version' must start with a digit (a Debian version)" >&2; exit 1 ;;
esac
if [ "${1:-}" = "--swift" ]; then
  file=${2:?--swift FILE}
  mkdir -p "$(dirname "$file")"
  text="// Written by scripts/version.sh when the build starts.
let buildVersion = \"$version\""
  # Rewritten only when it differs, so an unchanged version recompiles nothing.
  [ -f "$file" ] && [ "$(cat "$file")" = "$text" ] || printf '%s\n' "$text" > "$file"
else
  echo "$version"
fi
