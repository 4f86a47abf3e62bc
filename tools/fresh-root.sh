#!/usr/bin/env bash
# Runs a command in a clean clone of this repository's committed HEAD inside a brand-new Debian 12
# root filesystem: what a new user's machine has, and nothing installed here by hand.
#
#   bash tools/fresh-root.sh [--keep] 'COMMAND'      e.g. bash tools/fresh-root.sh 'bash tools/test.sh'
#
# As root. The base system is made once with debootstrap (minbase, from the mirror this machine's
# apt sources name) and cached as a tarball; every run unpacks it anew. Downloaded .deb files are
# cached too (only the downloads: every run installs its packages itself). The clone sits at
# /root/convjit with nothing beside it. /proc, /sys and /dev are mounted for the command and
# unmounted on every exit path. --keep leaves the root in place and prints its path.
#
# Exit status: the command's own, or 125 when no fresh root could be made here (no root rights,
# debootstrap, mount or chroot refused); the reason is the last line on stderr.
set -euo pipefail

cache=${CONVJIT_FRESH_ROOT_CACHE:-/var/cache/convjit-fresh-root}
keep=0
if [ "${1:-}" = "--keep" ]; then keep=1; shift; fi
[ $# -eq 1 ] || { sed -n '2,14p' "$0" >&2; exit 2; }
command=$1
repo=$(cd "$(dirname "$0")/.." && git rev-parse --show-toplevel)

cannot() { echo "fresh-root: cannot make a fresh root here: $*" >&2; exit 125; }
[ "$(id -u)" -eq 0 ] || cannot "not root"

apt_mirror() {
  local m
  m=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
  [ -n "$m" ] || m=$(awk '/^deb / {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  echo "$m"
}

make_base() {
  local base=$1 mirror tmp
  if ! command -v debootstrap >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null ||
      cannot "debootstrap is not installed and could not be"
  fi
  mirror=$(apt_mirror)
  [ -n "$mirror" ] || cannot "no mirror in this machine's apt sources"
  tmp=$(mktemp -d "$cache/base.XXXXXX")
  echo "fresh-root: making the Debian 12 base from $mirror (once, cached in $cache)" >&2
  if ! debootstrap --variant=minbase bookworm "$tmp" "$mirror" >"$cache/debootstrap.log" 2>&1; then
    rm -rf --one-file-system "$tmp"
    cannot "debootstrap failed (see $cache/debootstrap.log)"
  fi
  tar -C "$tmp" -czf "$base.part" . && mv "$base.part" "$base"
  rm -rf --one-file-system "$tmp"
}

mkdir -p "$cache/debs"
base=$cache/bookworm-minbase.tgz
[ -s "$base" ] || make_base "$base"

root=$(mktemp -d /tmp/convjit-fresh-root.XXXXXX)
mounts=(proc sys dev dev/pts var/cache/apt/archives)
cleanup() {
  local m i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    m=$root/${mounts[i]}
    if mountpoint -q "$m"; then umount "$m" 2>/dev/null || umount -l "$m"; fi
  done
  if [ $keep = 1 ]; then echo "fresh-root: kept $root" >&2; return; fi
  for m in "${mounts[@]}"; do
    if mountpoint -q "$root/$m"; then echo "fresh-root: $root/$m still mounted, root left in place" >&2; return; fi
  done
  rm -rf --one-file-system "$root"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

tar -C "$root" -xzf "$base"
rm -f "$root/etc/apt/sources.list" "$root"/etc/apt/sources.list.d/*
cp /etc/apt/sources.list.d/*.sources "$root/etc/apt/sources.list.d/" 2>/dev/null ||
  cp /etc/apt/sources.list "$root/etc/apt/sources.list"
cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
mount -t proc proc "$root/proc" || cannot "mounting /proc refused"
mount -t sysfs sys "$root/sys" || cannot "mounting /sys refused"
mount --bind /dev "$root/dev" || cannot "binding /dev refused"
mount --bind /dev/pts "$root/dev/pts" || cannot "binding /dev/pts refused"
mount --bind "$cache/debs" "$root/var/cache/apt/archives" || cannot "binding the .deb cache refused"
chroot "$root" /bin/true || cannot "chroot refused"

git clone -q "$repo" "$root/root/convjit"
echo "fresh-root: in a new Debian 12 root at commit $(git -C "$repo" rev-parse --short HEAD): $command" >&2
set +e
chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 \
  ${CI:+CI="$CI"} /bin/bash -c "cd /root/convjit && $command"
status=$?
set -e
echo "fresh-root: exit status $status" >&2
exit $status
